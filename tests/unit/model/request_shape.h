#pragma once
// Request-shape checks: the JSON deskd sends, compared field by field with the official
// SDKs' request types (anthropic-sdk-python's and openai-python's TypedDicts). A field the
// SDK does not know, a field of the wrong JSON type, or a missing required field fails.

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace deskd::model::testing {

enum class JsonKind { string, integer, number, boolean, object, array, string_or_array, string_or_null };

struct SdkField {
  std::string_view name;
  JsonKind kind;
  bool required = false;
};

inline bool has_kind(const boost::json::value& value, JsonKind kind) {
  switch (kind) {
    case JsonKind::string: return value.is_string();
    case JsonKind::integer: return value.is_int64() || value.is_uint64();
    case JsonKind::number: return value.is_number();
    case JsonKind::boolean: return value.is_bool();
    case JsonKind::object: return value.is_object();
    case JsonKind::array: return value.is_array();
    case JsonKind::string_or_array: return value.is_string() || value.is_array();
    case JsonKind::string_or_null: return value.is_string() || value.is_null();
  }
  return false;
}

/// Fails the test when `object` (named `where` in messages) holds a field not in `fields`,
/// a field of another JSON type, or lacks a required one.
inline void expect_sdk_shape(const boost::json::object& object, std::initializer_list<SdkField> fields, std::string_view where) {
  for (const auto& [key, value] : object) {
    const SdkField* known = nullptr;
    for (const SdkField& field : fields) {
      if (field.name == key) known = &field;
    }
    if (known == nullptr) {
      ADD_FAILURE() << where << ": the SDK's type has no field \"" << key << "\" (" << boost::json::serialize(object) << ")";
      continue;
    }
    EXPECT_TRUE(has_kind(value, known->kind)) << where << ": \"" << key << "\" has the wrong type: " << boost::json::serialize(value);
  }
  for (const SdkField& field : fields) {
    if (field.required) {
      EXPECT_TRUE(object.contains(field.name)) << where << " lacks the required \"" << field.name << "\"";
    }
  }
}

}  // namespace deskd::model::testing
