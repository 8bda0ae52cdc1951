#pragma once
// How the API rules read a request body: its kind from the content type, a JSON body parsed
// with duplicate keys refused, a form decoded, and one body check judged against it. Private
// to policy/api_*.cpp; policy/api_rules.h is the contract.

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "policy/api_rules.h"

namespace deskd::policy::api_body {

enum class BodyKind { json, form, other };

/// The media type of a Content-Type value: lower case, without parameters or blanks
/// ("application/json; charset=utf-8" → "application/json").
std::string media_type(std::string_view content_type);
/// application/json → json, application/x-www-form-urlencoded → form, else other.
BodyKind body_kind(std::string_view content_type);

/// A form's fields in order, names and values decoded ('+' is a space); nullopt when a
/// %-escape is malformed.
using FormFields = std::vector<std::pair<std::string, std::string>>;
std::optional<FormFields> parse_form(std::string_view body);
/// `text` encoded for a form: unreserved characters as they are, ' ' as '+', the rest %XX.
std::string form_encoded(std::string_view text);

/// A JSON body; refused when malformed or when an object holds a key twice (servers differ
/// in which one they read, so the one checked might not be the one used). The error is a
/// short clause: "the body is not valid JSON", "the body's JSON has the key \"quantity\" twice".
Result<boost::json::value> parse_json(std::string_view body);

/// A body read for checks: a JSON value or form fields.
struct ParsedBody {
  BodyKind kind = BodyKind::other;
  boost::json::value json;
  FormFields form;
};
/// The body read by its kind; the error is a short clause as parse_json's (or "the body is
/// not a valid form", "the body is not JSON or a form").
Result<ParsedBody> parse_body(std::string_view content_type, std::string_view body);

/// Why `body` fails `check` ("quantity is 500, above 100", "quantity is missing"); nullopt
/// when it passes.
std::optional<std::string> check_refusal(const BodyCheck& check, const ParsedBody& body);

/// A JSON value for a message: serialized, made safe to print, cut at `maximum_bytes`
/// with "…".
std::string printable(const boost::json::value& value, std::size_t maximum_bytes = 80);
/// A number as short as it reads back exactly ("250000", "1500.5").
std::string number_text(double value);

}  // namespace deskd::policy::api_body
