// What the gate shows of a body to a person deciding, and the fixed fields it adds to a body
// (policy/api_rules.h).

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>

#include "base/terminal_text.h"
#include "base/utf8_text.h"
#include "base/ascii_text.h"
#include "policy/api_body.h"
#include "policy/api_rules.h"

namespace deskd::policy {
namespace {

using api_body::BodyKind;

// Collects "name=value" parts until the text is past `maximum_bytes`: a huge body is never
// summarised whole only to be cut.
class Summary {
 public:
  explicit Summary(std::size_t maximum_bytes) : maximum_bytes_(maximum_bytes) {}

  bool full() const { return text_.size() > maximum_bytes_; }
  void add(std::string_view name, std::string_view value) {
    if (full()) return;
    if (!text_.empty()) text_ += ", ";
    text_ += terminal_text(name);
    text_ += '=';
    text_ += terminal_text(value);
  }
  void add_json(const std::string& path, const boost::json::value& value) {
    if (full()) return;
    if (const auto* object = value.if_object(); object != nullptr && !object->empty()) {
      for (const auto& member : *object) {
        const std::string key(member.key());
        add_json(path.empty() ? key : path + "." + key, member.value());
      }
    } else if (const auto* array = value.if_array(); array != nullptr && !array->empty()) {
      for (std::size_t index = 0; index < array->size(); ++index) {
        add_json(path.empty() ? std::to_string(index) : path + "." + std::to_string(index), (*array)[index]);
      }
    } else if (value.is_double()) {
      add(path, api_body::number_text(value.get_double()));  // serialize would write 1.5005E3
    } else {
      add(path, boost::json::serialize(value));
    }
  }
  std::string take() {
    if (text_.size() <= maximum_bytes_) return std::move(text_);
    const std::size_t keep = maximum_bytes_ > 3 ? maximum_bytes_ - 3 : 0;
    return std::string(utf8_prefix(text_, keep)) + "…";
  }

 private:
  std::size_t maximum_bytes_;
  std::string text_;
};

std::string size_and_type(std::string_view content_type, std::string_view body, std::string_view note = {}) {
  const std::string type = content_type.empty() ? std::string("no content type") : terminal_text(content_type);
  return std::to_string(body.size()) + " bytes of " + type + std::string(note);
}

Error not_added(const ApiAddedField& field, std::string_view kind, std::string_view content_type) {
  return Error::refusal(
      "the API adds the " + std::string(kind) + " field '" + field.name + "' to this request, but its body is " +
      (content_type.empty() ? std::string("of no content type") : "of type " + terminal_text(content_type)) +
      std::string(kind == "JSON" ? ", not a JSON object" : ", not a form"));
}

// A form's pieces as written, each with its decoded name; nullopt when one is malformed.
std::optional<std::vector<std::pair<std::string, std::string>>> form_pieces(std::string_view body) {
  std::vector<std::pair<std::string, std::string>> pieces;
  while (!body.empty()) {
    const std::size_t amp = body.find('&');
    const std::string_view piece = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (piece.empty()) continue;
    auto decoded = api_body::parse_form(piece);
    if (!decoded || decoded->size() != 1) return std::nullopt;
    pieces.emplace_back(std::string(piece), std::move(decoded->front().first));
  }
  return pieces;
}

}  // namespace

std::string summarise_api_body(std::string_view content_type, std::string_view body, std::size_t maximum_bytes) {
  Summary summary(maximum_bytes);
  switch (api_body::body_kind(content_type)) {
    case BodyKind::json: {
      auto json = api_body::parse_json(body);
      if (!json.ok()) return size_and_type(content_type, body, " (" + json.error().what + ")");
      summary.add_json("", *json);
      break;
    }
    case BodyKind::form: {
      auto form = api_body::parse_form(body);
      if (!form) return size_and_type(content_type, body, " (not a valid form)");
      for (const auto& [name, value] : *form) summary.add(name, value);
      break;
    }
    case BodyKind::other: return size_and_type(content_type, body);
  }
  return summary.take();
}

std::vector<const ApiAddedField*> added_fields_for(const ApiSpec& spec, std::string_view method,
                                                   std::string_view path) {
  const std::string wanted = uppercase(method);
  std::vector<const ApiAddedField*> fields;
  for (const ApiAddedField& field : spec.added_fields) {
    const bool method_matches =
        field.methods.empty() || std::any_of(field.methods.begin(), field.methods.end(),
                                             [&](const std::string& one) { return uppercase(one) == wanted; });
    if (method_matches && api_path_matches(field.path, path)) fields.push_back(&field);
  }
  return fields;
}

Result<std::string> with_added_body_fields(std::string_view content_type, std::string_view body,
                                           const std::vector<const ApiAddedField*>& fields) {
  const BodyKind kind = api_body::body_kind(content_type);
  std::optional<boost::json::value> json;
  // A form keeps its other fields byte for byte: each piece as written, with its decoded name.
  std::optional<std::vector<std::pair<std::string, std::string>>> form;
  for (const ApiAddedField* field : fields) {
    if (field->kind == ApiAddedField::Kind::json) {
      if (kind != BodyKind::json) return not_added(*field, "JSON", content_type);
      if (!json) {
        if (body.empty()) {
          json = boost::json::object();
        } else {
          auto parsed = api_body::parse_json(body);
          if (!parsed.ok() || !parsed->is_object()) return not_added(*field, "JSON", content_type);
          json = std::move(parsed).value();
        }
      }
      json->as_object()[field->name] = boost::json::string(field->value);
    } else if (field->kind == ApiAddedField::Kind::form) {
      if (kind != BodyKind::form) return not_added(*field, "form", content_type);
      if (!form) {
        form = form_pieces(body);
        if (!form) return not_added(*field, "form", content_type);
      }
      // The first field of that name takes the value and any later one goes, so the server
      // reads the value the API adds whichever of them it would have read.
      const std::string piece = api_body::form_encoded(field->name) + "=" + api_body::form_encoded(field->value);
      const auto named = [&](const auto& entry) { return entry.second == field->name; };
      auto first = std::find_if(form->begin(), form->end(), named);
      if (first == form->end()) {
        form->emplace_back(piece, field->name);
      } else {
        first->first = piece;
        form->erase(std::remove_if(first + 1, form->end(), named), form->end());
      }
    }
  }
  if (json) return boost::json::serialize(*json);
  if (!form) return std::string(body);
  std::string joined;
  for (const auto& [piece, name] : *form) joined += (joined.empty() ? "" : "&") + piece;
  return joined;
}

}  // namespace deskd::policy
