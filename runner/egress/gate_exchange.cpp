// The upstream half of a gate connection (gate_exchange.h): the API's server reached at
// its pinned or public addresses, TLS verified against the API's CA or the system's with
// SNI and the host checked, and each request's line, event and refusal.
#include "runner/egress/gate_exchange.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "base/asio_await.h"
#include "policy/egress_allowlist.h"
#include "runner/events/event_kinds.h"

namespace deskd::egress {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = asio::ssl;
using asio::awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t kMaximumResponseHeadBytes = 64 * 1024;

}  // namespace

LedgerEntry GateExchange::entry_for(const ApiHttpRequest& request, const std::string& digest, std::size_t size) const {
  LedgerEntry entry;
  entry.api = api.spec.name;
  entry.method = std::string(request.method_string());
  entry.origin = origin.text();
  entry.path = std::string(request.target());
  entry.request_bytes = size;
  entry.request_sha256 = digest;
  return entry;
}

bool GateExchange::record(LedgerEntry entry) {
  auto written = settings().ledger->append(entry);
  return written.ok();
}

boost::json::object GateExchange::event_data(const LedgerEntry& entry) const {
  return {{"api", entry.api}, {"method", entry.method}, {"url", entry.origin + entry.path}, {"rule", entry.rule}};
}

void GateExchange::refused(LedgerEntry entry, const std::string& why) {
  auto data = event_data(entry);
  data["why"] = why;
  gate.report_refusal(std::move(data));
}

void GateExchange::called(const LedgerEntry& entry) {
  auto data = event_data(entry);
  data["outcome"] = entry.outcome;
  data["status"] = entry.status;
  if (settings().events) settings().events(desk::event_kind::kApiCall, std::move(data));
}

policy::ApiDecision GateExchange::decide(const ApiHttpRequest& request) {
  const std::string method(request.method_string());
  const std::string_view content_type = request[http::field::content_type];
  const policy::ApiRequestView view{method, path_of(request.target()), content_type, request.body()};
  const auto moment = settings().moment_at(settings().clock->now());
  const std::lock_guard lock(gate.rules_mutex_);
  return gate.rule_books_[api_index].decide(view, moment);
}

std::optional<std::string> GateExchange::foreign_placeholder(std::string_view bytes) const {
  for (const auto& other : gate.apis_) {
    if (&other == &api) continue;
    for (const auto& credential : other.credentials) {
      if (bytes.find(credential.placeholder) != std::string_view::npos) return credential.config.variable;
    }
  }
  return std::nullopt;
}

awaitable<std::optional<std::string>> GateExchange::connect_upstream() {
  auto executor = co_await asio::this_coro::executor;
  std::vector<tcp::endpoint> endpoints;
  if (!api.spec.addresses.empty()) {
    for (const auto& text : api.spec.addresses) {
      boost::system::error_code error;
      const auto address = asio::ip::make_address(text, error);
      if (!error) endpoints.emplace_back(address, origin.port);
    }
  } else {
    tcp::resolver resolver(executor);
    auto [error, results] = co_await resolver.async_resolve(origin.host, std::to_string(origin.port),
                                                            tcp::resolver::numeric_service, kAwait);
    if (error) co_return "resolving " + origin.host + " failed: " + error.message();
    for (const auto& result : results) {
      const auto address = result.endpoint().address();
      auto checked = address.is_v4()
                         ? policy::NetworkAddress::v4(address.to_v4().to_bytes())
                         : policy::NetworkAddress::parse(address.to_string()).value_or(policy::NetworkAddress{});
      // Only public addresses, unless the operator pinned the API's (`addresses`).
      if (policy::refused_destination(policy::EgressAllowlist{}, checked, origin.port)) continue;
      endpoints.push_back(result.endpoint());
    }
    if (endpoints.empty()) co_return origin.host + " resolves to no public address (pin it with `addresses`)";
  }
  std::optional<tcp::socket> socket;
  for (const auto& endpoint : endpoints) {
    tcp::socket trying(executor);
    auto outcome = co_await (trying.async_connect(endpoint, kAwait) || expire_after(settings().connect_timeout));
    if (outcome.index() == 0 && !std::get<0>(std::get<0>(outcome))) {
      socket.emplace(std::move(trying));
      break;
    }
  }
  if (!socket) co_return "could not connect to " + origin.text();
  socket->set_option(tcp::no_delay(true));
  if (origin.scheme != "https") {
    upstream.emplace<tcp::socket>(std::move(*socket));
    co_return std::nullopt;
  }
  auto& stream = upstream.emplace<ssl::stream<tcp::socket>>(std::move(*socket), *gate.upstream_tls_[api_index]);
  SSL* handle = stream.native_handle();
  boost::system::error_code parse_error;
  asio::ip::make_address(origin.host, parse_error);
  if (parse_error) {
    SSL_set_tlsext_host_name(handle, origin.host.c_str());
    X509_VERIFY_PARAM_set1_host(SSL_get0_param(handle), origin.host.c_str(), 0);
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), origin.host.c_str());
  }
  auto shaken =
      co_await (stream.async_handshake(ssl::stream_base::client, kAwait) || expire_after(settings().connect_timeout));
  if (shaken.index() == 1) co_return "the TLS handshake with " + origin.text() + " took too long";
  if (auto [error] = std::get<0>(shaken); error) {
    const long verified = SSL_get_verify_result(handle);
    std::string why = "the TLS handshake with " + origin.text() + " failed: " + error.message();
    if (verified != X509_V_OK) why += " (" + std::string(X509_verify_cert_error_string(verified)) + ")";
    upstream.emplace<std::monostate>();
    co_return why;
  }
  co_return std::nullopt;
}

awaitable<std::variant<ApiHttpResponse, std::string>> GateExchange::exchange(ApiHttpRequest& request) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool fresh = std::holds_alternative<std::monostate>(upstream);
    if (fresh) {
      if (auto failed = co_await connect_upstream()) co_return *failed;
    }
    auto outcome = co_await std::visit(
        [&](auto& stream) -> awaitable<std::variant<ApiHttpResponse, std::string>> {
          if constexpr (std::is_same_v<std::decay_t<decltype(stream)>, std::monostate>) {
            co_return std::string("no connection upstream");
          } else {
            auto [write_error, written] = co_await http::async_write(stream, request, kAwait);
            if (write_error) co_return "sending to " + origin.text() + " failed: " + write_error.message();
            boost::beast::flat_buffer buffer;
            http::response_parser<http::string_body> parser;
            parser.header_limit(kMaximumResponseHeadBytes);
            parser.body_limit(kMaximumApiResponseBytes);
            if (request.method() == http::verb::head) parser.skip(true);
            auto read = co_await (http::async_read(stream, buffer, parser, kAwait) ||
                                  expire_after(settings().response_timeout));
            if (read.index() == 1) co_return origin.text() + " did not answer in time";
            if (auto [error, got] = std::get<0>(read); error) {
              co_return "reading the answer of " + origin.text() + " failed: " + error.message();
            }
            co_return parser.release();
          }
        },
        upstream);
    if (std::holds_alternative<ApiHttpResponse>(outcome) || fresh) co_return outcome;
    upstream.emplace<std::monostate>();  // a kept connection the server had closed: once more
  }
  co_return std::string("no connection upstream");
}

}  // namespace deskd::egress
