#include "runner/tools/tool_input.h"

#include <boost/json/value.hpp>

#include <cmath>

namespace deskd::tools {

const boost::json::value* ToolInput::field(std::string_view key) const {
  const auto* value = input_.if_contains(key);
  return value == nullptr || value->is_null() ? nullptr : value;
}

Error ToolInput::needs(std::string_view what) const {
  return Error::make(ErrorCode::invalid_argument,
                     std::string(tool_name_) + " needs " + std::string(what) + ".");
}

Result<std::string> ToolInput::required_string(std::string_view key) const {
  const auto* value = field(key);
  const auto* string = value != nullptr ? value->if_string() : nullptr;
  if (string == nullptr) return needs("a string '" + std::string(key) + "'");
  return std::string(string->data(), string->size());
}

Result<std::optional<std::string>> ToolInput::optional_string(std::string_view key) const {
  const auto* value = field(key);
  if (value == nullptr) return std::optional<std::string>();
  const auto* string = value->if_string();
  if (string == nullptr) return needs("a string '" + std::string(key) + "'");
  return std::optional<std::string>(std::string(string->data(), string->size()));
}

Result<std::optional<bool>> ToolInput::optional_bool(std::string_view key) const {
  const auto* value = field(key);
  if (value == nullptr) return std::optional<bool>();
  const auto* flag = value->if_bool();
  if (flag == nullptr) return needs("'" + std::string(key) + "' to be true or false");
  return std::optional<bool>(*flag);
}

Result<std::optional<std::uint64_t>> ToolInput::optional_count(std::string_view key) const {
  const auto* value = field(key);
  if (value == nullptr) return std::optional<std::uint64_t>();
  const auto wrong = [&] { return needs("'" + std::string(key) + "' to be a whole number of at least 1"); };
  if (const auto* number = value->if_int64()) {
    if (*number < 1) return wrong();
    return std::optional<std::uint64_t>(static_cast<std::uint64_t>(*number));
  }
  if (const auto* number = value->if_uint64()) {
    if (*number < 1) return wrong();
    return std::optional<std::uint64_t>(*number);
  }
  if (const auto* number = value->if_double()) {
    // Some clients send every number as a double; accept those that are whole.
    if (!std::isfinite(*number) || *number < 1 || *number > 9.0e15 || std::floor(*number) != *number) {
      return wrong();
    }
    return std::optional<std::uint64_t>(static_cast<std::uint64_t>(*number));
  }
  return wrong();
}

}  // namespace deskd::tools
