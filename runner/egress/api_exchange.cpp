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

#include "base/ascii_text.h"
#include "base/asio_await.h"
#include "policy/egress_allowlist.h"
#include "runner/egress/api_gate.h"
#include "runner/egress/api_request.h"
#include "runner/egress/gate_exchange.h"
#include "runner/events/event_kinds.h"
#include "runner/events/india_time.h"

namespace deskd::egress {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = asio::ssl;
using asio::awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t kMaximumHeadBytes = 16 * 1024;
constexpr std::size_t kPumpBytes = 16 * 1024;

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
    auto head =
        co_await (http::async_read_header(stream, buffer, parser, kAwait) || expire_after(settings.idle_timeout));
    if (head.index() == 1) co_return;
    if (auto [error, got] = std::get<0>(head); error) {
      // Beast checks a declared length against the bound as it reads the head.
      if (error == http::error::body_limit) {
        co_await send_response(stream,
                               gate_response(413, "the body is too large to check", spec.name, "",
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
      co_await send_response(stream,
                             gate_response(413, "the body is too large to check", spec.name, "",
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
        co_await send_response(stream,
                               gate_response(413, "the body is too large to check", spec.name, "",
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
        co_await send_response(stream,
                               gate_response(503, "the ledger cannot be written", spec.name, entry.rule, "", false));
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
                            {{"approval", published.id},
                             {"api", published.api},
                             {"method", published.method},
                             {"url", published.url},
                             {"summary", published.summary},
                             {"sha256", published.sha256},
                             {"rule", published.rule},
                             {"expires_at", desk::iso8601_india(published.expires_at)},
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
        co_await send_response(
            stream, gate_response(403, "refused by deskd's API gate", spec.name, entry.rule, why, keep_alive));
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
      co_await send_response(
          stream, gate_response(400, "refused by deskd's API gate", spec.name, entry.rule, entry.reason, keep_alive));
      if (!keep_alive) co_return;
      continue;
    }
    if (!exchange.record(entry)) {
      co_await send_response(stream,
                             gate_response(503, "the ledger cannot be written", spec.name, entry.rule, "", false));
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
    if (!is_head)
      prepare_downstream_response(response, kept);
    else
      response.keep_alive(kept);
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
    report_refusal({{"api", api.spec.name},
                    {"url", origin.text()},
                    {"why", "the TLS server name " + std::string(named) + " is not " + origin.host}});
    co_return;
  }
  co_await serve_requests(exchange, stream, buffer);
  boost::system::error_code ignored;
  stream.next_layer().close(ignored);
}

}  // namespace deskd::egress
