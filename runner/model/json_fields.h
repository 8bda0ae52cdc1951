#pragma once
// Small readers for the model APIs' JSON: a field of the wanted kind or nothing, never an
// exception, so a reply of an unexpected shape becomes a clear error instead of a crash.

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deskd::model::json_fields {

/// The object `text` holds, or nullopt with `error` saying why ("not JSON: ...").
inline std::optional<boost::json::object> parse_object(std::string_view text, std::string& error) {
  boost::system::error_code code;
  boost::json::value value = boost::json::parse(text, code);
  if (code) {
    error = "not JSON (" + code.message() + ")";
    return std::nullopt;
  }
  if (!value.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  return std::move(value.as_object());
}

/// `object[key]` if it is an object.
inline const boost::json::object* object_at(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  return value != nullptr ? value->if_object() : nullptr;
}

/// `object[key]` if it is a string.
inline std::optional<std::string> string_at(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return std::string(value->as_string());
}

/// `object[key]` if it is a whole number that is not negative (a token count, an index).
inline std::optional<std::uint64_t> count_at(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_uint64()) return value->as_uint64();
  if (value->is_int64() && value->as_int64() >= 0) return static_cast<std::uint64_t>(value->as_int64());
  return std::nullopt;
}

/// The text of a tool_result's content: a string as is, an array's text blocks joined by
/// newlines (the Messages API allows both), anything else as JSON.
inline std::string text_of(const boost::json::value& content) {
  if (content.is_string()) return std::string(content.as_string());
  if (!content.is_array()) return content.is_null() ? std::string() : boost::json::serialize(content);
  std::string text;
  for (const boost::json::value& block : content.as_array()) {
    const boost::json::object* object = block.if_object();
    if (object == nullptr) continue;
    if (auto piece = string_at(*object, "text")) text += (text.empty() ? "" : "\n") + *piece;
  }
  return text;
}

}  // namespace deskd::model::json_fields
