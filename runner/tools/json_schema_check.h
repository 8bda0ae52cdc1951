#pragma once
// Checks a tool's arguments against the JSON Schema the tool declares, so that what a
// client is told (the inputSchema of tools/list) is what the server enforces. The subset
// the desk tools use is understood — type (one or a list), properties, required,
// additionalProperties (false or a schema), enum, const, minimum/maximum and their
// exclusive forms, minLength/maxLength, items, minItems/maxItems — and other keywords are
// left alone (they only describe). Recursion is bounded by the schema, which is ours.

#include <boost/json/fwd.hpp>

#include <optional>
#include <string>

namespace deskd::tools {

/// The first way `instance` breaks `schema`, as a sentence naming the field
/// ("'command' must be a string."); nullopt when it conforms.
std::optional<std::string> schema_violation(const boost::json::value& schema, const boost::json::value& instance);

}  // namespace deskd::tools
