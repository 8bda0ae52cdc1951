#include "runner/egress/api_request.h"

#include <openssl/evp.h>

#include <boost/beast/core/string.hpp>
#include <boost/json/serialize.hpp>

#include <array>
#include <memory>
#include <vector>

#include "base/ascii_text.h"
#include "base/hex.h"

namespace deskd::egress {
namespace {

namespace http = boost::beast::http;

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

std::string percent_encoded(std::string_view text) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string encoded;
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      encoded += '%';
      encoded += kDigits[c >> 4];
      encoded += kDigits[c & 15];
    }
  }
  return encoded;
}

// OpenSSL's base64 (EVP_EncodeBlock): the well-kept one already linked.
std::string base64(std::string_view bytes) {
  std::string encoded(4 * ((bytes.size() + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  encoded.resize(written < 0 ? 0 : static_cast<std::size_t>(written));
  return encoded;
}

std::optional<std::string> unbase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string decoded(3 * text.size() / 4, '\0');
  const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                      reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (written < 0) return std::nullopt;
  std::size_t size = static_cast<std::size_t>(written);
  // EVP_DecodeBlock counts the padding's zero bytes.
  for (std::size_t pad = 0; pad < 2 && !text.empty() && text[text.size() - 1 - pad] == '='; ++pad) --size;
  decoded.resize(size);
  return decoded;
}

bool is_hop_by_hop(std::string_view name, bool upgrade) {
  if (upgrade && (equals_ignoring_case(name, "connection") || equals_ignoring_case(name, "upgrade"))) return false;
  for (std::string_view hop : {"connection", "proxy-connection", "keep-alive", "proxy-authorization",
                               "proxy-authenticate", "te", "trailer", "upgrade", "host", "expect"}) {
    if (equals_ignoring_case(name, hop)) return true;
  }
  return false;
}

const GateCredential* credential_placed(const GatedApi& api, policy::CredentialPlacement placement) {
  for (const auto& credential : api.credentials) {
    if (credential.config.placement == placement) return &credential;
  }
  return nullptr;
}

// Each placeholder of `api` in `text` becomes its key.
void put_keys(std::string& text, const GatedApi& api) {
  for (const auto& credential : api.credentials) replace_all(text, credential.placeholder, credential.key);
}

void apply_basic(ApiHttpRequest& request, const GatedApi& api) {
  const auto* user = credential_placed(api, policy::CredentialPlacement::basic_user);
  const auto* password = credential_placed(api, policy::CredentialPlacement::basic_password);
  if (user == nullptr || password == nullptr) return;
  const auto existing = request.find(http::field::authorization);
  if (existing != request.end()) {
    const std::string_view value = existing->value();
    if (value.size() > 6 && equals_ignoring_case(value.substr(0, 6), "basic ")) {
      if (auto decoded = unbase64(value.substr(6)); decoded && decoded->find(user->placeholder) != std::string::npos) {
        put_keys(*decoded, api);
        request.set(http::field::authorization, "Basic " + base64(*decoded));
        return;
      }
    }
  }
  request.set(http::field::authorization, "Basic " + base64(user->key + ":" + password->key));
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return hex_encode(std::span<const unsigned char>(digest.data(), size));
}

std::string request_bytes(const ApiHttpRequest& request) {
  std::string bytes = std::string(request.method_string()) + " " + std::string(request.target()) + " HTTP/" +
                      std::to_string(request.version() / 10) + "." + std::to_string(request.version() % 10) + "\r\n";
  for (const auto& field : request) {
    bytes.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
  }
  bytes += "\r\n";
  bytes += request.body();
  return bytes;
}

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

bool host_matches(std::string_view host_field, const policy::ApiOrigin& origin) {
  if (equals_ignoring_case(host_field, origin.host)) return true;
  return equals_ignoring_case(host_field, origin.host + ":" + std::to_string(origin.port));
}

Result<ApiHttpRequest> prepare_upstream_request(ApiHttpRequest request, const GatedApi& api,
                                                const policy::ApiOrigin& origin, bool upgrade) {
  const std::string method(request.method_string());
  const std::string path(path_of(request.target()));
  const auto added = policy::added_fields_for(api.spec, method, path);
  if (std::any_of(added.begin(), added.end(),
                  [](const auto* field) { return field->kind != policy::ApiAddedField::Kind::header; })) {
    const auto content_type = request[http::field::content_type];
    auto body = policy::with_added_body_fields(content_type, request.body(), added);
    if (!body.ok()) return body.error();
    request.body() = std::move(body).value();
  }
  for (const auto* field : added) {
    if (field->kind == policy::ApiAddedField::Kind::header) request.set(field->name, field->value);
  }
  // Hop-by-hop fields go; the rest keep their order.
  std::vector<std::string> hop;
  for (const auto& field : request) {
    if (is_hop_by_hop(field.name_string(), upgrade)) hop.emplace_back(field.name_string());
  }
  for (const auto& name : hop) request.erase(name);

  std::string target(request.target());
  put_keys(target, api);
  for (const auto& credential : api.credentials) {
    if (credential.config.placement != policy::CredentialPlacement::query) continue;
    const std::string wanted = credential.config.name + "=";
    const auto query = target.find('?');
    const bool present = query != std::string::npos &&
                         (target.find("?" + wanted) != std::string::npos || target.find("&" + wanted) != std::string::npos);
    if (!present) target += (query == std::string::npos ? "?" : "&") + credential.config.name + "=" + percent_encoded(credential.key);
  }
  request.target(target);

  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& field : request) fields.emplace_back(field.name_string(), field.value());
  for (auto& [name, value] : fields) {
    std::string replaced = value;
    put_keys(replaced, api);
    if (replaced != value) request.set(name, replaced);
  }
  for (const auto& credential : api.credentials) {
    if (credential.config.placement != policy::CredentialPlacement::header) continue;
    const auto existing = request.find(credential.config.name);
    if (existing != request.end() && existing->value().find(credential.key) != std::string_view::npos) continue;
    std::string value = credential.config.template_text;
    replace_all(value, "{key}", credential.key);
    request.set(credential.config.name, value);
  }
  apply_basic(request, api);
  if (std::any_of(api.credentials.begin(), api.credentials.end(), [](const auto& c) { return c.config.in_body; })) {
    for (const auto& credential : api.credentials) {
      if (credential.config.in_body) replace_all(request.body(), credential.placeholder, credential.key);
    }
  }
  request.set(http::field::host, origin.port == (origin.scheme == "https" ? 443 : 80)
                                     ? origin.host
                                     : origin.host + ":" + std::to_string(origin.port));
  request.keep_alive(true);
  if (upgrade) request.set(http::field::connection, "Upgrade");
  if (!request.body().empty() || request.method() == http::verb::post || request.method() == http::verb::put ||
      request.method() == http::verb::patch) {
    request.prepare_payload();
  }
  return request;
}

ApiHttpResponse gate_response(unsigned status, std::string_view error, std::string_view api, std::string_view rule,
                              std::string_view why, bool keep_alive) {
  ApiHttpResponse response{static_cast<http::status>(status), 11};
  response.set(http::field::server, "deskd");
  response.set(http::field::content_type, "application/json");
  boost::json::object body{{"error", error}, {"api", api}, {"rule", rule}, {"why", why}};
  response.body() = boost::json::serialize(body) + "\n";
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

void prepare_downstream_response(ApiHttpResponse& response, bool keep_alive) {
  std::vector<std::string> hop;
  for (const auto& field : response) {
    if (is_hop_by_hop(field.name_string(), false) || equals_ignoring_case(field.name_string(), "transfer-encoding")) {
      hop.emplace_back(field.name_string());
    }
  }
  for (const auto& name : hop) response.erase(name);
  response.keep_alive(keep_alive);
  response.prepare_payload();
}

}  // namespace deskd::egress
