#pragma once
// ToolInput: reads the fields of a tool's JSON input without throwing (Boost.JSON's
// accessors throw on a wrong type), and words each problem so a model can fix its call:
// "read_file needs a string 'path'." Fields that are not asked for are ignored, and an
// optional field given as null counts as absent, as models often send it that way.

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace deskd::tools {

class ToolInput {
 public:
  /// `input` must outlive this reader.
  ToolInput(std::string_view tool_name, const boost::json::object& input)
      : tool_name_(tool_name), input_(input) {}

  /// A string field that must be present.
  Result<std::string> required_string(std::string_view key) const;
  /// A string field that may be absent (or null).
  Result<std::optional<std::string>> optional_string(std::string_view key) const;
  /// A true/false field that may be absent (or null).
  Result<std::optional<bool>> optional_bool(std::string_view key) const;
  /// A whole number of at least 1 that may be absent (or null). 3.0 counts as 3.
  Result<std::optional<std::uint64_t>> optional_count(std::string_view key) const;

 private:
  const boost::json::value* field(std::string_view key) const;
  Error needs(std::string_view what) const;

  std::string_view tool_name_;
  const boost::json::object& input_;
};

}  // namespace deskd::tools
