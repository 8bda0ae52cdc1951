// One connection of a desk to a gated origin, request by request (see api_gate.h): TLS with
// the desk, the checks, the ledger, approvals, and the kept-alive connection upstream.
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>
#include <variant>

#include "base/asio_await.h"
#include "base/ascii_text.h"
#include "policy/egress_allowlist.h"
#include "runner/events/event_kinds.h"
#include "runner/events/india_time.h"
#include "runner/egress/api_gate.h"
#include "runner/egress/api_request.h"

namespace deskd::egress {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = asio::ssl;
using asio::awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t kMaximumHeadBytes = 16 * 1024;
constexpr std::size_t kMaximumResponseHeadBytes = 64 * 1024;
constexpr std::size_t kPumpBytes = 16 * 1024;

// The server's end upstream: a TLS stream or a plain socket, made when first needed and kept
// for the requests after.
using Upstream = std::variant<std::monostate, tcp::socket, ssl::stream<tcp::socket>>;

template <class From, class To>
awaitable<void> pump(From& from, To& to) {
  std::vector<char> buffer(kPumpBytes);
  for (;;) {
    auto [error, got] = co_await from.async_read_some(asio::buffer(buffer), kAwait);
    if (error || got == 0) co_return;
    auto [written_error, written] = co_await asio::async_write(to, asio::buffer(buffer.data(), got), kAwait);
    if (written_error) co_return;
  }
}

}  // namespace

// The gate's side of one desk connection (a friend of ApiGate).
struct GateExchange {
  ApiGate& gate;
  const GatedApi& api;
  const policy::ApiOrigin& origin;
  std::size_t api_index = 0;
  ApiGate::Charge charge;
  Upstream upstream;

  bool within_budget(std::uint64_t bytes) const { return !charge || charge(bytes); }

  const ApiGateSettings& settings() const { return gate.settings_; }

  LedgerEntry entry_for(const ApiHttpRequest& request, const std::string& digest, std::size_t size) const {
    LedgerEntry entry;
    entry.api = api.spec.name;
    entry.method = std::string(request.method_string());
    entry.origin = origin.text();
    entry.path = std::string(request.target());
    entry.request_bytes = size;
    entry.request_sha256 = digest;
    return entry;
  }

  // The line goes first: a request is never sent without it. A ledger that cannot be written
  // stops the request (fail closed).
  bool record(LedgerEntry entry) {
    auto written = settings().ledger->append(entry);
    return written.ok();
  }

  boost::json::object event_data(const LedgerEntry& entry) const {
    return {{"api", entry.api}, {"method", entry.method}, {"url", entry.origin + entry.path}, {"rule", entry.rule}};
  }

  void refused(LedgerEntry entry, const std::string& why) {
    auto data = event_data(entry);
    data["why"] = why;
    gate.report_refusal(std::move(data));
  }

  void called(const LedgerEntry& entry) {
    auto data = event_data(entry);
    data["outcome"] = entry.outcome;
    data["status"] = entry.status;
    if (settings().events) settings().events(desk::event_kind::kApiCall, std::move(data));
  }

  // What the rules say, under the gate's lock (the books count).
  policy::ApiDecision decide(const ApiHttpRequest& request) {
    const std::string method(request.method_string());
    const std::string_view content_type = request[http::field::content_type];
    const policy::ApiRequestView view{method, path_of(request.target()), content_type, request.body()};
    const auto moment = settings().moment_at(settings().clock->now());
    const std::lock_guard lock(gate.rules_mutex_);
    return gate.rule_books_[api_index].decide(view, moment);
  }

  // Another API's placeholder in this request: a leak attempt.
  std::optional<std::string> foreign_placeholder(std::string_view bytes) const {
    for (const auto& other : gate.apis_) {
      if (&other == &api) continue;
      for (const auto& credential : other.credentials) {
        if (bytes.find(credential.placeholder) != std::string_view::npos) return credential.config.variable;
      }
    }
    return std::nullopt;
  }

  awaitable<std::optional<std::string>> connect_upstream() {
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
        auto checked = address.is_v4() ? policy::NetworkAddress::v4(address.to_v4().to_bytes())
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
    auto shaken = co_await (stream.async_handshake(ssl::stream_base::client, kAwait) ||
                            expire_after(settings().connect_timeout));
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

  // Sends `request` upstream and reads the response; the error sentence when that failed.
  awaitable<std::variant<ApiHttpResponse, std::string>> exchange(ApiHttpRequest& request) {
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
};

namespace {

template <class Stream>
awaitable<void> send_response(Stream& stream, ApiHttpResponse response) {
  (void)co_await http::async_write(stream, response, kAwait);
}

template <class Stream>
awaitable<void> serve_requests(GateExchange& exchange, Stream& stream, boost::beast::flat_buffer& buffer) {
  const auto& settings = exchange.settings();
  const auto& spec = exchange.api.spec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaximumHeadBytes);
    parser.body_limit(spec.maximum_body_bytes);
    auto head = co_await (http::async_read_header(stream, buffer, parser, kAwait) || expire_after(settings.idle_timeout));
    if (head.index() == 1) co_return;
    if (auto [error, got] = std::get<0>(head); error) {
      // Beast checks a declared length against the bound as it reads the head.
      if (error == http::error::body_limit) {
        co_await send_response(stream, gate_response(413, "the body is too large to check", spec.name, "",
                                                     "over " + std::to_string(spec.maximum_body_bytes) + " bytes", false));
      } else if (error != http::error::end_of_stream && error != asio::error::eof &&
                 error != ssl::error::stream_truncated) {
        co_await send_response(stream, gate_response(400, "not an HTTP/1.1 request deskd can read", spec.name, "",
                                                     error.message(), false));
      }
      co_return;
    }
    auto& header = parser.get();
    if (parser.content_length() && *parser.content_length() > spec.maximum_body_bytes) {
      co_await send_response(stream, gate_response(413, "the body is too large to check", spec.name, "",
                                                   "over " + std::to_string(spec.maximum_body_bytes) + " bytes", false));
      co_return;
    }
    if (equals_ignoring_case(header[http::field::expect], "100-continue")) {
      const std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)co_await asio::async_write(stream, asio::buffer(kContinue), kAwait);
    }
    auto body = co_await (http::async_read(stream, buffer, parser, kAwait) || expire_after(settings.request_timeout));
    if (body.index() == 1) co_return;
    if (auto [error, got] = std::get<0>(body); error) {
      if (error == http::error::body_limit) {
        co_await send_response(stream, gate_response(413, "the body is too large to check", spec.name, "",
                                                     "over " + std::to_string(spec.maximum_body_bytes) + " bytes", false));
      } else if (error != http::error::end_of_stream && error != asio::error::eof) {
        co_await send_response(stream, gate_response(400, "not an HTTP/1.1 request deskd can read", spec.name, "",
                                                     error.message(), false));
      }
      co_return;
    }
    ApiHttpRequest request = parser.release();
    const bool keep_alive = request.keep_alive();
    const std::string bytes = request_bytes(request);
    const std::string digest = sha256_hex(bytes);
    LedgerEntry entry = exchange.entry_for(request, digest, bytes.size());
    if (!exchange.within_budget(bytes.size())) {
      exchange.refused(entry, "the desk's egress byte budget (egress_mb) is spent");
      co_await send_response(stream, gate_response(403, "refused by deskd's API gate", spec.name, "",
                                                   "the desk's egress byte budget (egress_mb) is spent", false));
      co_return;
    }

    // Checks that need no rule: the target's form, the Host, a leak.
    std::string refusal;
    unsigned status = 403;
    if (request.target().empty() || request.target().front() != '/') {
      refusal = "the request target must be a path (origin form)";
      status = 400;
    } else if (!host_matches(request[http::field::host], exchange.origin)) {
      refusal = "Host " + std::string(request[http::field::host]) + " is not " + exchange.origin.host;
      status = 400;
    } else if (auto leaked = exchange.foreign_placeholder(bytes)) {
      refusal = "the request carries the placeholder of " + *leaked + ", which belongs to another API: a leak attempt";
    }
    policy::ApiDecision decision;
    if (refusal.empty()) {
      decision = exchange.decide(request);
      if (decision.rule != nullptr) entry.rule = decision.rule->name;
      if (decision.action == policy::ApiAction::deny) refusal = decision.why;
    }
    if (!refusal.empty()) {
      entry.outcome = status == 403 ? "denied" : "refused";
      entry.status = static_cast<int>(status);
      entry.reason = refusal;
      exchange.record(entry);
      exchange.refused(entry, refusal);
      co_await send_response(stream, gate_response(status, "refused by deskd's API gate", spec.name, entry.rule,
                                                   refusal, keep_alive && status == 403));
      if (!keep_alive || status != 403) co_return;
      continue;
    }

    const bool upgrade = request.find(http::field::upgrade) != request.end();
    const bool is_head = request.method() == http::verb::head;
    if (decision.action == policy::ApiAction::ask) {
      entry.outcome = "asked";
      if (!exchange.record(entry)) {
        co_await send_response(stream, gate_response(503, "the ledger cannot be written", spec.name, entry.rule, "", false));
        co_return;
      }
      PendingApproval pending;
      pending.desk = settings.desk;
      pending.api = spec.name;
      pending.method = entry.method;
      pending.url = entry.origin + entry.path;
      pending.summary = policy::summarise_api_body(request[http::field::content_type], request.body());
      pending.sha256 = digest;
      pending.rule = entry.rule;
      pending.asked_at = settings.clock->now();
      pending.expires_at = pending.asked_at + spec.approval_timeout;
      auto decided = co_await settings.approvals->ask(
          pending, std::chrono::duration_cast<std::chrono::milliseconds>(spec.approval_timeout),
          [&](const PendingApproval& published) {
            entry.approval = published.id;
            if (!settings.events) return;
            settings.events(desk::event_kind::kApiCallAwaitingApproval,
                            {{"approval", published.id}, {"api", published.api}, {"method", published.method},
                             {"url", published.url}, {"summary", published.summary}, {"sha256", published.sha256},
                             {"rule", published.rule}, {"expires_at", desk::iso8601_india(published.expires_at)},
                             {"expires_in_seconds", static_cast<std::int64_t>(spec.approval_timeout.count())}});
          });
      std::string why;
      if (!decided.ok()) {
        why = decided.error().what;
        entry.outcome = "refused";
      } else if (decided->outcome == ApprovalOutcome::approved) {
        entry.outcome = "approved";
        entry.reason = "approved by " + decided->who;
      } else if (decided->outcome == ApprovalOutcome::denied) {
        entry.outcome = "denied";
        why = "denied by " + decided->who;
      } else {
        entry.outcome = "timed_out";
        why = "nobody approved it within " + std::to_string(spec.approval_timeout.count()) + " s";
      }
      if (!why.empty()) {
        entry.status = 403;
        entry.reason = why;
        exchange.record(entry);
        exchange.refused(entry, why);
        co_await send_response(stream, gate_response(403, "refused by deskd's API gate", spec.name, entry.rule, why, keep_alive));
        if (!keep_alive) co_return;
        continue;
      }
    } else {
      entry.outcome = "allowed";
    }

    auto prepared = prepare_upstream_request(std::move(request), exchange.api, exchange.origin, upgrade);
    if (!prepared.ok()) {
      entry.outcome = "refused";
      entry.status = 400;
      entry.reason = prepared.error().what;
      exchange.record(entry);
      exchange.refused(entry, entry.reason);
      co_await send_response(stream, gate_response(400, "refused by deskd's API gate", spec.name, entry.rule,
                                                   entry.reason, keep_alive));
      if (!keep_alive) co_return;
      continue;
    }
    if (!exchange.record(entry)) {
      co_await send_response(stream, gate_response(503, "the ledger cannot be written", spec.name, entry.rule, "", false));
      co_return;
    }
    auto answered = co_await exchange.exchange(*prepared);
    if (auto* failed = std::get_if<std::string>(&answered)) {
      exchange.upstream.template emplace<std::monostate>();
      entry.outcome = "failed_upstream";
      entry.status = 502;
      entry.reason = *failed;
      exchange.record(entry);
      exchange.called(entry);
      co_await send_response(stream, gate_response(502, "the API's server could not be reached", spec.name, entry.rule,
                                                   *failed, keep_alive));
      if (!keep_alive) co_return;
      continue;
    }
    auto& response = std::get<ApiHttpResponse>(answered);
    entry.outcome = "answered";
    entry.status = static_cast<int>(response.result_int());
    entry.response_bytes = response.body().size();
    entry.response_sha256 = sha256_hex(response.body());
    entry.reason.clear();
    exchange.record(entry);
    exchange.called(entry);
    if (!exchange.within_budget(response.body().size())) co_return;
    if (upgrade && response.result() == http::status::switching_protocols) {
      (void)co_await http::async_write(stream, response, kAwait);
      // The upgraded bytes (a WebSocket's frames) pass through both ways.
      co_await std::visit(
          [&](auto& up) -> awaitable<void> {
            if constexpr (std::is_same_v<std::decay_t<decltype(up)>, std::monostate>) {
              co_return;
            } else {
              co_await (pump(stream, up) || pump(up, stream));
            }
          },
          exchange.upstream);
      co_return;
    }
    const bool kept = keep_alive && response.keep_alive();
    if (!response.keep_alive()) exchange.upstream.template emplace<std::monostate>();
    if (!is_head) prepare_downstream_response(response, kept);
    else response.keep_alive(kept);
    auto [written_error, written] = co_await http::async_write(stream, response, kAwait);
    if (written_error || !kept) co_return;
  }
}

}  // namespace

awaitable<void> ApiGate::serve(tcp::socket client, const GatedApi& api, const policy::ApiOrigin& origin,
                               std::string already, Charge charge) {
  GateExchange exchange{*this, api, origin, static_cast<std::size_t>(&api - apis_.data()), std::move(charge), {}};
  client.set_option(tcp::no_delay(true));
  boost::beast::flat_buffer buffer;
  if (origin.scheme != "https") {
    auto prepared = buffer.prepare(already.size());
    asio::buffer_copy(prepared, asio::buffer(already));
    buffer.commit(already.size());
    co_await serve_requests(exchange, client, buffer);
    co_return;
  }
  auto context = authority_->server_context(origin.host);
  if (!context.ok()) {
    report_refusal({{"api", api.spec.name}, {"url", origin.text()}, {"why", context.error().what}});
    co_return;
  }
  ssl::stream<tcp::socket> stream(std::move(client), **context);
  auto shaken = co_await (stream.async_handshake(ssl::stream_base::server, asio::buffer(already), kAwait) ||
                          expire_after(settings_.handshake_timeout));
  if (shaken.index() == 1) co_return;
  if (auto [error, used] = std::get<0>(shaken); error) co_return;
  // The name the desk asked for must be the origin's: one certificate, one origin.
  const char* named = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
  if (named != nullptr && !equals_ignoring_case(named, origin.host)) {
    report_refusal({{"api", api.spec.name}, {"url", origin.text()},
                    {"why", "the TLS server name " + std::string(named) + " is not " + origin.host}});
    co_return;
  }
  co_await serve_requests(exchange, stream, buffer);
  boost::system::error_code ignored;
  stream.next_layer().close(ignored);
}

}  // namespace deskd::egress
