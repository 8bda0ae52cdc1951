#include "runner/tools/json_schema_check.h"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cmath>
#include <cstdio>
#include <string_view>

#include "base/utf8_text.h"

namespace deskd::tools {
namespace {

namespace json = boost::json;

// A client's key or value in a message, kept short (it is valid UTF-8: it was parsed).
std::string shortened(std::string_view text) {
  const std::string_view prefix = utf8_prefix(text, 60);
  return std::string(prefix) + (prefix.size() < text.size() ? "..." : "");
}

// Where a value sits, as a person reads it: "the arguments", "'path'", "'items'[2]".
std::string where(const std::string& path) { return path.empty() ? "the arguments" : path; }

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? "'" + shortened(key) + "'" : path + "." + shortened(key);
}

bool is_whole(const json::value& value) {
  if (value.is_int64() || value.is_uint64()) return true;
  if (!value.is_double()) return false;
  const double number = value.as_double();
  return std::isfinite(number) && std::floor(number) == number;
}

double number_of(const json::value& value) {
  if (value.is_int64()) return static_cast<double>(value.as_int64());
  if (value.is_uint64()) return static_cast<double>(value.as_uint64());
  return value.as_double();
}

bool has_type(const json::value& value, std::string_view type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return is_whole(value);
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_bool();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return true;  // a type this checker does not know restricts nothing it can tell
}

std::string a_type(std::string_view type) {
  if (type == "integer") return "a whole number";
  if (type == "array") return "an array";
  if (type == "object") return "an object";
  if (type == "null") return "null";
  return "a " + std::string(type);
}

std::optional<std::string> check(const json::value& schema, const json::value& value, const std::string& path);

std::optional<std::string> check_type(const json::object& schema, const json::value& value, const std::string& path) {
  const json::value* type = schema.if_contains("type");
  if (type == nullptr) return std::nullopt;
  if (type->is_string()) {
    if (has_type(value, type->as_string())) return std::nullopt;
    return where(path) + " must be " + a_type(type->as_string()) + ".";
  }
  if (!type->is_array()) return std::nullopt;
  std::string expected;
  for (const auto& each : type->as_array()) {
    if (!each.is_string()) continue;
    if (has_type(value, each.as_string())) return std::nullopt;
    expected += (expected.empty() ? "" : " or ") + a_type(each.as_string());
  }
  return expected.empty() ? std::nullopt : std::optional(where(path) + " must be " + expected + ".");
}

std::optional<std::string> check_object(const json::object& schema, const json::object& value, const std::string& path) {
  const json::value* properties = schema.if_contains("properties");
  const json::object* declared = properties != nullptr && properties->is_object() ? &properties->as_object() : nullptr;
  if (const json::value* required = schema.if_contains("required"); required != nullptr && required->is_array()) {
    for (const auto& key : required->as_array()) {
      if (key.is_string() && !value.contains(key.as_string())) {
        return child(path, key.as_string()) + " is required.";
      }
    }
  }
  const json::value* additional = schema.if_contains("additionalProperties");
  for (const auto& [key, member] : value) {
    const json::value* property = declared != nullptr ? declared->if_contains(key) : nullptr;
    if (property != nullptr) {
      if (auto problem = check(*property, member, child(path, key))) return problem;
    } else if (additional != nullptr && additional->is_bool() && !additional->as_bool()) {
      std::string known;
      if (declared != nullptr) {
        for (const auto& each : *declared) known += (known.empty() ? "'" : ", '") + std::string(each.key()) + "'";
      }
      return child(path, key) + " is not an argument of this tool" +
             (known.empty() ? std::string(", which takes none.") : "; it takes " + known + ".");
    } else if (additional != nullptr && additional->is_object()) {
      if (auto problem = check(*additional, member, child(path, key))) return problem;
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_bounds(const json::object& schema, const json::value& value, const std::string& path) {
  const auto bound = [&schema](std::string_view keyword) -> std::optional<double> {
    const json::value* given = schema.if_contains(keyword);
    if (given == nullptr || !given->is_number()) return std::nullopt;
    return number_of(*given);
  };
  if (value.is_number()) {
    const double number = number_of(value);
    const auto text = [](double limit) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%.15g", limit);  // 1, not Boost.JSON's 1E0
      return std::string(buffer);
    };
    if (auto minimum = bound("minimum"); minimum && number < *minimum) {
      return where(path) + " must be at least " + text(*minimum) + ".";
    }
    if (auto maximum = bound("maximum"); maximum && number > *maximum) {
      return where(path) + " must be at most " + text(*maximum) + ".";
    }
    if (auto minimum = bound("exclusiveMinimum"); minimum && number <= *minimum) {
      return where(path) + " must be more than " + text(*minimum) + ".";
    }
    if (auto maximum = bound("exclusiveMaximum"); maximum && number >= *maximum) {
      return where(path) + " must be less than " + text(*maximum) + ".";
    }
  }
  if (value.is_string()) {
    // JSON Schema counts characters (code points); the string is valid UTF-8.
    std::size_t characters = 0;
    for (const char c : value.as_string()) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (auto minimum = bound("minLength"); minimum && characters < *minimum) {
      return where(path) + " must be at least " + std::to_string(static_cast<long long>(*minimum)) + " characters long.";
    }
    if (auto maximum = bound("maxLength"); maximum && characters > *maximum) {
      return where(path) + " must be at most " + std::to_string(static_cast<long long>(*maximum)) + " characters long.";
    }
  }
  if (value.is_array()) {
    const double count = static_cast<double>(value.as_array().size());
    if (auto minimum = bound("minItems"); minimum && count < *minimum) {
      return where(path) + " must have at least " + std::to_string(static_cast<long long>(*minimum)) + " items.";
    }
    if (auto maximum = bound("maxItems"); maximum && count > *maximum) {
      return where(path) + " must have at most " + std::to_string(static_cast<long long>(*maximum)) + " items.";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check(const json::value& schema_value, const json::value& value, const std::string& path) {
  if (!schema_value.is_object()) return std::nullopt;  // `true`, or a schema this checker cannot read
  const json::object& schema = schema_value.as_object();
  if (auto problem = check_type(schema, value, path)) return problem;
  if (const json::value* choices = schema.if_contains("enum"); choices != nullptr && choices->is_array()) {
    bool found = false;
    std::string listed;
    for (const auto& choice : choices->as_array()) {
      found = found || choice == value;
      listed += (listed.empty() ? "" : ", ") + json::serialize(choice);
    }
    if (!found) return where(path) + " must be one of " + listed + ".";
  }
  if (const json::value* constant = schema.if_contains("const"); constant != nullptr && *constant != value) {
    return where(path) + " must be " + json::serialize(*constant) + ".";
  }
  if (auto problem = check_bounds(schema, value, path)) return problem;
  if (value.is_object()) return check_object(schema, value.as_object(), path);
  if (const json::value* items = schema.if_contains("items"); items != nullptr && value.is_array()) {
    std::size_t index = 0;
    for (const auto& item : value.as_array()) {
      if (auto problem = check(*items, item, where(path) + "[" + std::to_string(index++) + "]")) return problem;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> schema_violation(const json::value& schema, const json::value& instance) {
  return check(schema, instance, "");
}

}  // namespace deskd::tools
