// The [[api]] tables, their [[api.credential]] and [[api.add]] entries (config_api.h). The
// rules are read in config_api_rules.cpp, the desks' side in config_api_desks.cpp.

#include "runner/config/config_api.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "policy/network_address.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::app::config_detail {
namespace {

// Variables the sandbox sets itself or that steer every HTTP client in it: a placeholder
// there would break the desk or its proxy, or be overwritten.
constexpr std::string_view kReservedVariables[] = {"PATH",
                                                   "HOME",
                                                   "LANG",
                                                   "TERM",
                                                   "TZ",
                                                   "SSL_CERT_FILE",
                                                   "SSL_CERT_DIR",
                                                   "REQUESTS_CA_BUNDLE",
                                                   "CURL_CA_BUNDLE",
                                                   "NODE_EXTRA_CA_CERTS"};

// An HTTP header name: a token (RFC 9110 section 5.6.2).
bool is_header_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// The array of tables under `key` ([[api.KEY]]); null when absent or mistyped (reported).
const toml::array* tables(TableReader& reader, std::string_view key, std::string_view written) {
  const toml::node* node = reader.find(key);
  if (node == nullptr) return nullptr;
  const auto* array = node->as_array();
  if (array == nullptr || (!array->empty() && !array->is_array_of_tables())) {
    reader.problem(*node,
                   "'" + std::string(key) + "' must be an array of tables, each written " + std::string(written));
    return nullptr;
  }
  return array;
}

// A key file must be a regular file: a folder, a fifo or a device is not a secret deskd reads.
void check_key_file(const PlacedPath& key_file, LoadContext& context) {
  struct stat status {};
  if (::stat(key_file.path.c_str(), &status) != 0) {
    if (errno == EACCES || errno == EPERM) return;  // `deskd check` run by someone who may not look
    context.problems.add(key_file.position, "the key file " + key_file.path.native() +
                                                (errno == ENOENT ? " does not exist" : " cannot be examined"));
  } else if (!S_ISREG(status.st_mode)) {
    context.problems.add(key_file.position, "the key file " + key_file.path.native() + " is not a regular file");
  }
}

// The one of `keys` the table holds; reports none or more than one at the table.
std::optional<std::string_view> one_of(TableReader& reader, std::initializer_list<std::string_view> keys,
                                       std::string_view choices, LoadContext& context) {
  std::vector<std::string_view> given;
  for (const auto key : keys) {
    if (reader.find(key) != nullptr) given.push_back(key);
  }
  if (given.size() == 1) return given.front();
  const toml::node* second = given.size() > 1 ? reader.find(given[1]) : nullptr;
  const std::string message = reader.title() + " needs exactly one of " + std::string(choices) +
                              (given.empty() ? "" : ", not " + std::to_string(given.size()));
  if (second != nullptr) {
    reader.problem(*second, message);
  } else {
    context.problems.add(reader.position(), message);
  }
  return std::nullopt;
}

void read_credential(const toml::table& table, const std::string& api, LoadContext& context, ApiDraft& draft) {
  TableReader reader(&table, "[[api.credential]]", context);
  policy::ApiCredential credential;
  if (auto variable = required_string(reader, "variable")) {
    const toml::node& node = *reader.find("variable");
    const bool taken = std::any_of(draft.variables.begin(), draft.variables.end(),
                                   [&](const auto& entry) { return entry.first == *variable; });
    if (auto usable = check_placeholder_variable(*variable); !usable.ok()) {
      reader.problem(node, usable.error().what);
    } else if (taken) {
      reader.problem(node, "the variable " + in_quotes(*variable) + " holds another credential of API " +
                               in_quotes(api) + " already; each credential needs a variable of its own");
    } else {
      draft.variables.emplace_back(*variable, reader.where(node));
      credential.variable = std::move(*variable);
    }
  }
  if (reader.find("key_file") == nullptr) {
    reader.missing("key_file");
  } else if (auto key_file = reader.path("key_file", "the key file of API " + in_quotes(api))) {
    check_key_file(*key_file, context);
    credential.key_file = key_file->path;
    context.daemon_paths.push_back(std::move(*key_file));  // hidden from every desk
  }
  const auto placement = one_of(reader, {"header", "query", "basic"}, "'header', 'query' or 'basic'", context);
  if (placement == "header") {
    if (auto name = reader.string("header")) {
      if (is_header_name(*name)) {
        credential.name = std::move(*name);
      } else {
        reader.problem(*reader.find("header"), "'header' must be an HTTP header name, not " + in_quotes(*name));
      }
    }
  } else if (placement == "query") {
    if (auto name = required_string(reader, "query")) credential.name = std::move(*name);
  } else if (placement == "basic") {
    if (auto part = reader.choice("basic", {"user", "password"})) {
      credential.placement =
          *part == "user" ? policy::CredentialPlacement::basic_user : policy::CredentialPlacement::basic_password;
    }
  }
  if (placement) {
    credential.placement = *placement == "header"  ? policy::CredentialPlacement::header
                           : *placement == "query" ? policy::CredentialPlacement::query
                                                   : credential.placement;
  }
  if (auto template_text = reader.string("template")) {
    const toml::node& node = *reader.find("template");
    if (placement != "header") {
      reader.problem(node, "'template' is the value of a header credential; this credential has no 'header'");
    } else if (template_text->find("{key}") == std::string::npos) {
      reader.problem(node, "'template' must hold {key}, where the key goes, not " + in_quotes(*template_text));
    } else if (has_control_character(*template_text)) {
      reader.problem(node, "'template' must not hold a control character (a line break would start a new header)");
    } else {
      credential.template_text = std::move(*template_text);
    }
  }
  if (auto in_body = reader.boolean("in_body")) credential.in_body = *in_body;
  reader.report_unknown_keys();
  draft.spec.credentials.push_back(std::move(credential));
}

void read_added_field(const toml::table& table, LoadContext& context, policy::ApiSpec& spec) {
  TableReader reader(&table, "[[api.add]]", context);
  policy::ApiAddedField field;
  const auto kind = one_of(reader, {"header", "json", "form"}, "'header', 'json' or 'form'", context);
  if (kind) {
    field.kind = *kind == "header" ? policy::ApiAddedField::Kind::header
                 : *kind == "json" ? policy::ApiAddedField::Kind::json
                                   : policy::ApiAddedField::Kind::form;
    if (auto name = required_string(reader, *kind)) {
      if (*kind == "header" && !is_header_name(*name)) {
        reader.problem(*reader.find(*kind), "'header' must be an HTTP header name, not " + in_quotes(*name));
      }
      field.name = std::move(*name);
    }
  }
  if (reader.find("value") == nullptr) {
    reader.missing("value");
  } else if (auto value = reader.string("value")) {
    if (has_control_character(*value)) {
      reader.problem(*reader.find("value"), "'value' must not hold a control character");
    }
    field.value = std::move(*value);
  }
  if (auto methods = reader.strings("methods")) {
    for (auto& [method, node] : *methods) {
      if (!is_header_name(method)) {
        reader.problem(*node, "'methods' must hold HTTP methods such as \"POST\", not " + in_quotes(method));
        continue;
      }
      std::transform(method.begin(), method.end(), method.begin(),
                     [](char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); });
      field.methods.push_back(std::move(method));
    }
  }
  if (auto path = reader.string("path")) {
    if (auto checked = policy::check_api_path_pattern(*path); !checked.ok()) {
      reader.problem(*reader.find("path"), checked.error().what);
    }
    field.path = std::move(*path);
  }
  reader.report_unknown_keys();
  spec.added_fields.push_back(std::move(field));
}

void read_origins(TableReader& reader, policy::ApiSpec& spec, LoadContext& context) {
  const toml::node* node = reader.find("origins");
  if (node == nullptr) {
    context.problems.add(reader.position(), reader.title() + " needs 'origins', the scheme://host[:port] it covers");
    return;
  }
  auto origins = reader.strings("origins");
  if (!origins) return;
  if (origins->empty())
    reader.problem(*node, "'origins' must name at least one origin, such as \"https://api.kite.trade\"");
  for (const auto& [text, element] : *origins) {
    auto origin = policy::parse_api_origin(text);
    if (!origin.ok()) {
      reader.problem(*element, origin.error().what);
    } else if (std::find(spec.origins.begin(), spec.origins.end(), *origin) == spec.origins.end()) {
      spec.origins.push_back(std::move(origin).value());
    }
  }
}

ApiDraft read_api(const toml::table& table, std::map<std::string, std::uint32_t>& names, LoadContext& context) {
  TableReader reader(&table, "[[api]]", context);
  ApiDraft draft;
  draft.position = reader.position();
  policy::ApiSpec& spec = draft.spec;
  if (auto name = required_string(reader, "name")) {
    const toml::node& node = *reader.find("name");
    if (!is_desk_name(*name)) {
      reader.problem(node, "API name " + in_quotes(*name) + " must be 1 to 64 letters, digits, '_' or '-'");
    } else if (auto [first, inserted] = names.emplace(*name, reader.where(node).line); !inserted) {
      reader.problem(node, "API name " + in_quotes(*name) + " is used twice; the first is at line " +
                               std::to_string(first->second));
    }
    spec.name = std::move(*name);
  }
  read_origins(reader, spec, context);
  if (auto addresses = reader.strings("addresses")) {
    for (const auto& [text, element] : *addresses) {
      if (auto address = policy::NetworkAddress::parse(text)) {
        spec.addresses.push_back(address->text());
      } else {
        reader.problem(*element, "'addresses' must hold IP addresses such as \"127.0.0.1\", not " + in_quotes(text));
      }
    }
  }
  if (auto ca_file = reader.path("ca_file", "the CA file")) {
    if (expect_existing(context, *ca_file, PathKind::file, "the CA file")) spec.ca_file = ca_file->path;
  }
  if (auto kilobytes = reader.whole("max_body_kb", 1, 65536))
    spec.maximum_body_bytes = static_cast<std::size_t>(*kilobytes) << 10;
  if (auto seconds = reader.whole("approval_timeout_seconds", 1, 3600))
    spec.approval_timeout = std::chrono::seconds(*seconds);

  if (const auto* credentials = tables(reader, "credential", "[[api.credential]]")) {
    for (const auto& element : *credentials) read_credential(*element.as_table(), spec.name, context, draft);
  }
  // HTTP basic auth takes a user and a password: each from a credential of its own.
  const auto count = [&](policy::CredentialPlacement placement) {
    return std::count_if(spec.credentials.begin(), spec.credentials.end(),
                         [&](const auto& credential) { return credential.placement == placement; });
  };
  const auto users = count(policy::CredentialPlacement::basic_user);
  const auto passwords = count(policy::CredentialPlacement::basic_password);
  if (users > 1 || passwords > 1) {
    context.problems.add(draft.position,
                         "API " + in_quotes(spec.name) +
                             " has more than one basic 'user' or 'password' credential; basic auth takes one of each");
  } else if (users != passwords) {
    context.problems.add(draft.position, "API " + in_quotes(spec.name) + " has a basic " +
                                             (users == 1 ? "'user' credential but no 'password'"
                                                         : "'password' credential but no 'user'") +
                                             "; basic auth needs both, each from a [[api.credential]] of the same API");
  }
  if (const auto* added = tables(reader, "add", "[[api.add]]")) {
    for (const auto& element : *added) read_added_field(*element.as_table(), context, spec);
  }
  const auto* rules = tables(reader, "rule", "[[api.rule]]");
  if (reader.find("rule") == nullptr || (rules != nullptr && rules->empty())) {
    context.problems.add(draft.position, "[[api]] " + in_quotes(spec.name) +
                                             " needs at least one [[api.rule]]: with none, every request is denied");
  }
  for (std::size_t index = 0; rules != nullptr && index < rules->size(); ++index) {
    spec.rules.push_back(read_api_rule(*(*rules)[index].as_table(), index + 1, context));
  }
  reader.report_unknown_keys();
  return draft;
}

}  // namespace

Result<void> check_placeholder_variable(std::string_view name) {
  if (!sandbox::is_variable_name(name)) {
    return Error::make(
        ErrorCode::invalid_argument,
        "'variable' must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), not " + in_quotes(name));
  }
  const bool proxy = name.ends_with("_PROXY") || name.ends_with("_proxy");
  if (proxy || name.starts_with("LD_") ||
      std::find(std::begin(kReservedVariables), std::end(kReservedVariables), name) != std::end(kReservedVariables)) {
    return Error::make(ErrorCode::invalid_argument,
                       "'variable' " + in_quotes(name) +
                           " is one the sandbox sets itself (PATH, HOME, LANG, TERM, TZ, the CA bundle variables, "
                           "LD_*, *_PROXY); choose a name of the API's own, such as KITE_API_KEY");
  }
  return success();
}

std::vector<ApiDraft> read_apis(const toml::node& node, LoadContext& context) {
  std::vector<ApiDraft> drafts;
  const auto* array = node.as_array();
  if (array == nullptr || (!array->empty() && !array->is_array_of_tables())) {
    context.problems.add(context.where(node.source()), "'api' must be an array of tables, each written [[api]]");
    return drafts;
  }
  std::map<std::string, std::uint32_t> names;
  for (const auto& element : *array) drafts.push_back(read_api(*element.as_table(), names, context));
  return drafts;
}

}  // namespace deskd::app::config_detail
