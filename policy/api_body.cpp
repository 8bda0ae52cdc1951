// Reading a request body for the API rules (policy/api_body.h).

#include "policy/api_body.h"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <charconv>
#include <cmath>
#include <set>
#include <variant>

#include "base/ascii_text.h"
#include "base/terminal_text.h"
#include "base/utf8_text.h"

namespace deskd::policy::api_body {
namespace {

// A SAX handler that only looks for an object holding a key twice; boost::json::parse keeps
// the last of them silently, and a server might read the first.
struct DuplicateKeyFinder {
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  std::vector<std::set<std::string>> open_objects;
  std::string key;
  std::optional<std::string> duplicate;

  using string_view = boost::json::string_view;
  using error_code = boost::json::error_code;
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t, error_code&) { return true; }
  bool on_object_begin(error_code&) {
    open_objects.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t, error_code&) {
    open_objects.pop_back();
    return true;
  }
  bool on_string_part(string_view, std::size_t, error_code&) { return true; }
  bool on_string(string_view, std::size_t, error_code&) { return true; }
  bool on_key_part(string_view part, std::size_t, error_code&) {
    key.append(part.data(), part.size());
    return true;
  }
  bool on_key(string_view part, std::size_t, error_code& error) {
    key.append(part.data(), part.size());
    if (!open_objects.back().insert(key).second) {
      duplicate = key;
      error = boost::json::error::syntax;
      return false;
    }
    key.clear();
    return true;
  }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t, string_view, error_code&) { return true; }
  bool on_uint64(std::uint64_t, string_view, error_code&) { return true; }
  bool on_double(double, string_view, error_code&) { return true; }
  bool on_bool(bool, error_code&) { return true; }
  bool on_null(error_code&) { return true; }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

boost::json::value json_string(std::string_view text) {
  return boost::json::value(boost::json::string(boost::json::string_view(text.data(), text.size())));
}

Error clause(std::string text) { return Error::refusal(std::move(text)); }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> form_decoded(std::string_view text) {
  std::string decoded;
  decoded.reserve(text.size());
  for (std::size_t index = 0; index < text.size(); ++index) {
    const char c = text[index];
    if (c == '+') {
      decoded.push_back(' ');
    } else if (c == '%') {
      if (index + 2 >= text.size()) return std::nullopt;
      const int high = hex_digit(text[index + 1]);
      const int low = hex_digit(text[index + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      decoded.push_back(static_cast<char>(high * 16 + low));
      index += 2;
    } else {
      decoded.push_back(c);
    }
  }
  return decoded;
}

// What a check found at a field: a JSON value, or a form's text.
struct Found {
  const boost::json::value* json = nullptr;
  std::optional<std::string> form;
  std::size_t times = 0;  ///< for a form: how often the field was given
};

std::string field_name(const std::vector<std::string>& path) {
  std::string name;
  for (const auto& part : path) name += (name.empty() ? "" : ".") + part;
  return name;
}

Found find_field(const ParsedBody& body, const std::vector<std::string>& path) {
  Found found;
  if (body.kind == BodyKind::form) {
    const std::string name = field_name(path);
    for (const auto& [field, value] : body.form) {
      if (field != name) continue;
      if (found.times++ == 0) found.form = value;
    }
    return found;
  }
  const boost::json::value* current = &body.json;
  for (const auto& part : path) {
    if (const auto* object = current->if_object()) {
      current = object->if_contains(part);
    } else if (const auto* array = current->if_array()) {
      std::size_t index = 0;
      const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), index);
      current = error == std::errc() && end == part.data() + part.size() && index < array->size() ? &(*array)[index]
                                                                                                  : nullptr;
    } else {
      current = nullptr;
    }
    if (current == nullptr) return found;
  }
  found.json = current;
  found.times = 1;
  return found;
}

// A whole string as a finite number ("500", "-2.5", "1e3"; not " 5", "5x", "inf").
std::optional<double> strict_number(std::string_view text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> json_number(const boost::json::value& value) {
  if (value.is_int64()) return static_cast<double>(value.get_int64());
  if (value.is_uint64()) return static_cast<double>(value.get_uint64());
  if (value.is_double()) return value.get_double();
  return std::nullopt;
}

// The string a field holds, from a JSON string or a form.
std::optional<std::string> found_string(const Found& found) {
  if (found.form) return found.form;
  if (const auto* text = found.json->if_string()) return std::string(text->data(), text->size());
  return std::nullopt;
}

// The number a field holds: a JSON number, or a string that is one whole number.
std::optional<double> found_number(const Found& found) {
  if (found.json != nullptr) {
    if (auto number = json_number(*found.json)) return number;
  }
  if (auto text = found_string(found)) return strict_number(*text);
  return std::nullopt;
}

std::string found_text(const Found& found) {
  if (found.form) return printable(json_string(*found.form));
  return printable(*found.json);
}

// A field's number for a check, or why there is none.
std::variant<double, std::string> number_at(const ParsedBody& body, const std::vector<std::string>& path) {
  const std::string name = field_name(path);
  const Found found = find_field(body, path);
  if (found.times == 0) return name + " is missing";
  if (found.times > 1)
    return name + " is given " + std::to_string(found.times) + " times; a checked field must be given once";
  if (auto number = found_number(found)) return *number;
  return name + " is " + found_text(found) + ", not a number";
}

bool in_list(const Found& found, const boost::json::array& list) {
  for (const auto& element : list) {
    if (auto number = json_number(element)) {
      if (auto actual = found_number(found); actual && *actual == *number) return true;
    } else if (const auto* text = element.if_string()) {
      if (auto actual = found_string(found); actual && *actual == std::string_view(*text)) return true;
    }
  }
  return false;
}

}  // namespace

std::string media_type(std::string_view content_type) {
  return lowercase(trim(content_type.substr(0, content_type.find(';'))));
}

BodyKind body_kind(std::string_view content_type) {
  const std::string type = media_type(content_type);
  if (type == "application/json") return BodyKind::json;
  if (type == "application/x-www-form-urlencoded") return BodyKind::form;
  return BodyKind::other;
}

std::optional<FormFields> parse_form(std::string_view body) {
  FormFields fields;
  while (!body.empty()) {
    const std::size_t amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t equals = pair.find('=');
    auto name = form_decoded(pair.substr(0, equals));
    auto value = form_decoded(equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1));
    if (!name || !value) return std::nullopt;
    fields.emplace_back(std::move(*name), std::move(*value));
  }
  return fields;
}

std::string form_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      encoded.push_back(c);
    } else if (c == ' ') {
      encoded.push_back('+');
    } else {
      encoded += {'%', kHex[byte >> 4], kHex[byte & 15]};
    }
  }
  return encoded;
}

Result<boost::json::value> parse_json(std::string_view body) {
  boost::json::error_code error;
  boost::json::basic_parser<DuplicateKeyFinder> finder(boost::json::parse_options{});
  finder.write_some(false, body.data(), body.size(), error);
  if (finder.handler().duplicate) {
    return clause("the body's JSON has the key " + printable(json_string(*finder.handler().duplicate)) + " twice");
  }
  if (error) return clause("the body is not valid JSON");
  boost::json::value value = boost::json::parse(boost::json::string_view(body.data(), body.size()), error);
  if (error) return clause("the body is not valid JSON");
  return value;
}

Result<ParsedBody> parse_body(std::string_view content_type, std::string_view body) {
  ParsedBody parsed;
  parsed.kind = body_kind(content_type);
  if (parsed.kind == BodyKind::json) {
    auto json = parse_json(body);
    if (!json.ok()) return std::move(json).error();
    parsed.json = std::move(json).value();
  } else if (parsed.kind == BodyKind::form) {
    auto form = parse_form(body);
    if (!form) return clause("the body is not a valid form");
    parsed.form = std::move(*form);
  } else {
    return clause("the body is not JSON or a form");
  }
  return parsed;
}

std::optional<std::string> check_refusal(const BodyCheck& check, const ParsedBody& body) {
  std::string subject = field_name(check.field);
  const auto left = number_at(body, check.field);
  const bool needs_number = check.op != BodyCheck::Op::in && check.value.is_number();
  if (!check.factor.empty() || needs_number) {
    if (const auto* why = std::get_if<std::string>(&left)) return *why;
    double actual = std::get<double>(left);
    if (!check.factor.empty()) {
      const auto right = number_at(body, check.factor);
      if (const auto* why = std::get_if<std::string>(&right)) return *why;
      actual *= std::get<double>(right);
      subject += " * " + field_name(check.factor);
    }
    const std::string is = subject + " is " + number_text(actual);
    if (check.op == BodyCheck::Op::in) {
      for (const auto& element : check.value.get_array()) {
        if (json_number(element) == actual) return std::nullopt;
      }
      return is + ", not in " + printable(check.value, 200);
    }
    const double bound = *json_number(check.value);
    switch (check.op) {
      case BodyCheck::Op::less_or_equal:
        return actual <= bound ? std::nullopt : std::optional(is + ", above " + number_text(bound));
      case BodyCheck::Op::greater_or_equal:
        return actual >= bound ? std::nullopt : std::optional(is + ", below " + number_text(bound));
      default: return actual == bound ? std::nullopt : std::optional(is + ", not " + number_text(bound));
    }
  }
  // A string to equal, or a list to be in.
  const Found found = find_field(body, check.field);
  if (found.times == 0) return subject + " is missing";
  if (found.times > 1)
    return subject + " is given " + std::to_string(found.times) + " times; a checked field must be given once";
  if (check.op == BodyCheck::Op::in) {
    if (in_list(found, check.value.get_array())) return std::nullopt;
    return subject + " is " + found_text(found) + ", not in " + printable(check.value, 200);
  }
  const auto actual = found_string(found);
  if (actual && *actual == std::string_view(check.value.get_string())) return std::nullopt;
  return subject + " is " + found_text(found) + ", not " + printable(check.value);
}

std::string printable(const boost::json::value& value, std::size_t maximum_bytes) {
  // serialize writes a double as 1.5005E3.
  const std::string text =
      terminal_text(value.is_double() ? number_text(value.get_double()) : boost::json::serialize(value));
  if (text.size() <= maximum_bytes) return text;
  return std::string(utf8_prefix(text, maximum_bytes > 3 ? maximum_bytes - 3 : 0)) + "…";
}

std::string number_text(double value) {
  // Shortest form in plain digits ("200000", not "2e+05") where that stays short.
  char buffer[128];
  const auto format = std::fabs(value) < 1e15 ? std::chars_format::fixed : std::chars_format::general;
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value, format);
  return std::string(buffer, written.ptr);
}

}  // namespace deskd::policy::api_body
