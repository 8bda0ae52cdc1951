#include "runner/egress/api_gate.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/random_id.h"
#include "runner/events/event_kinds.h"

namespace deskd::egress {
namespace {

// A key file is a secret of a line or two; anything larger is a mistake worth a sentence.
constexpr std::uintmax_t kMaximumKeyFileBytes = 64 * 1024;

Result<std::string> read_key(const policy::ApiSpec& api, const policy::ApiCredential& credential) {
  std::error_code error;
  const auto size = std::filesystem::file_size(credential.key_file, error);
  if (error) {
    return Error::make(
        ErrorCode::invalid_argument,
        "API " + api.name + ": the key file " + credential.key_file.string() + " cannot be read: " + error.message());
  }
  if (size > kMaximumKeyFileBytes) {
    return Error::make(ErrorCode::invalid_argument,
                       "API " + api.name + ": the key file " + credential.key_file.string() + " is over 64 KiB");
  }
  std::ifstream file(credential.key_file, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  if (!file) {
    return Error::make(ErrorCode::invalid_argument,
                       "API " + api.name + ": the key file " + credential.key_file.string() + " cannot be read");
  }
  std::string key = text.str();
  // A trailing newline is the editor's, not the key's.
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  if (key.empty()) {
    return Error::make(ErrorCode::invalid_argument,
                       "API " + api.name + ": the key file " + credential.key_file.string() + " is empty");
  }
  if (key.find_first_of("\r\n") != std::string::npos || key.find('\0') != std::string::npos) {
    return Error::make(ErrorCode::invalid_argument, "API " + api.name + ": the key file " +
                                                        credential.key_file.string() +
                                                        " holds more than one line; a key is one line");
  }
  return key;
}

Result<std::shared_ptr<boost::asio::ssl::context>> upstream_context(const policy::ApiSpec& api) {
  namespace ssl = boost::asio::ssl;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression);
  boost::system::error_code error;
  if (api.ca_file) {
    context->load_verify_file(api.ca_file->string(), error);
  } else {
    context->set_default_verify_paths(error);
  }
  if (error) {
    return Error::make(ErrorCode::invalid_argument,
                       "API " + api.name + ": the CA to verify its server cannot be loaded: " + error.message());
  }
  context->set_verify_mode(ssl::verify_peer);
  // HTTP/1.1 only, as the gate speaks to the desk.
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(context->native_handle(), kAlpn, sizeof kAlpn);
  return context;
}

std::vector<std::string> hosts_of(const std::vector<policy::ApiSpec>& apis) {
  std::vector<std::string> hosts;
  for (const auto& api : apis) {
    for (const auto& origin : api.origins) {
      if (std::find(hosts.begin(), hosts.end(), origin.host) == hosts.end()) hosts.push_back(origin.host);
    }
  }
  return hosts;
}

}  // namespace

std::string make_placeholder(std::string_view variable) {
  std::string lower;
  for (char c : variable) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : (c == '_' ? '-' : c));
  return "deskd-placeholder-" + lower + "-" + random_hex(16);
}

Result<std::shared_ptr<ApiGate>> ApiGate::create(ApiGateSettings settings) {
  if (!settings.ledger || !settings.approvals || !settings.moment_at || !settings.clock) {
    return Error::make(ErrorCode::invalid_argument, "the API gate needs its ledger, approvals, market and clock");
  }
  std::vector<GatedApi> apis;
  for (const auto& spec : settings.apis) {
    GatedApi api{spec, {}};
    for (const auto& credential : spec.credentials) {
      DESKD_ASSIGN_OR_RETURN(auto key, read_key(spec, credential));
      api.credentials.push_back(GateCredential{credential, std::move(key), make_placeholder(credential.variable)});
    }
    apis.push_back(std::move(api));
  }
  DESKD_ASSIGN_OR_RETURN(auto authority, DeskAuthority::create(settings.desk, hosts_of(settings.apis)));
  auto gate = std::make_shared<ApiGate>(std::move(settings), std::move(apis), std::move(authority));
  for (const auto& api : gate->apis_) {
    DESKD_ASSIGN_OR_RETURN(auto context, upstream_context(api.spec));
    gate->upstream_tls_.push_back(std::move(context));
  }
  return gate;
}

ApiGate::ApiGate(ApiGateSettings settings, std::vector<GatedApi> apis, std::shared_ptr<DeskAuthority> authority)
    : settings_(std::move(settings)), apis_(std::move(apis)), authority_(std::move(authority)) {
  // The books point at the specs in apis_, which never move again.
  rule_books_.reserve(apis_.size());
  for (const auto& api : apis_) rule_books_.emplace_back(api.spec);
}

const GatedApi* ApiGate::api_for(std::string_view host, std::uint16_t port) const {
  for (const auto& api : apis_) {
    for (const auto& origin : api.spec.origins) {
      if (origin.host == host && origin.port == port) return &api;
    }
  }
  return nullptr;
}

const policy::ApiOrigin& ApiGate::origin_for(const GatedApi& api, std::string_view host, std::uint16_t port) const {
  for (const auto& origin : api.spec.origins) {
    if (origin.host == host && origin.port == port) return origin;
  }
  return api.spec.origins.front();
}

std::optional<std::string> ApiGate::placeholder_in(std::string_view bytes) const {
  for (const auto& api : apis_) {
    for (const auto& credential : api.credentials) {
      if (bytes.find(credential.placeholder) != std::string_view::npos) return credential.config.variable;
    }
  }
  return std::nullopt;
}

std::size_t ApiGate::longest_placeholder() const {
  std::size_t longest = 0;
  for (const auto& api : apis_) {
    for (const auto& credential : api.credentials) longest = std::max(longest, credential.placeholder.size());
  }
  return longest;
}

std::vector<std::string> ApiGate::environment() const {
  std::vector<std::string> entries;
  for (const auto& api : apis_) {
    for (const auto& credential : api.credentials)
      entries.push_back(credential.config.variable + "=" + credential.placeholder);
  }
  return entries;
}

const std::string& ApiGate::authority_pem() const { return authority_->certificate_pem(); }

void ApiGate::report_refusal(boost::json::object data) {
  const auto admitted = refusal_reports_.admit();
  if (!admitted) return;
  const std::uint64_t unreported = *admitted;
  if (unreported > 0) data["unreported_before"] = unreported;
  if (settings_.events) settings_.events(desk::event_kind::kApiRefused, std::move(data));
}

}  // namespace deskd::egress
