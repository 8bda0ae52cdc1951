// One connection of a desk's egress proxy: the request head, the checks, the connection to
// the origin and the relay of bytes both ways (see egress_proxy.h for the rules).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/asio_await.h"
#include "policy/egress_allowlist.h"
#include "runner/egress/api_gate.h"
#include "runner/egress/byte_relay.h"
#include "runner/egress/proxy_request.h"
#include "runner/egress/proxy_shared.h"
#include "runner/egress/socks_request.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

std::string reply(int status, std::string_view reason, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
         "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size() + 1) +
         "\r\n\r\n" + body + "\n";
}

awaitable<void> send_and_close(tcp::socket& client, const std::string& text) {
  (void)co_await asio::async_write(client, asio::buffer(text), kAwait);
  boost::system::error_code ignored;
  client.shutdown(tcp::socket::shutdown_send, ignored);
  client.close(ignored);
}

std::string shown(const ProxyTarget& target) {
  const bool v6 = target.host.find(':') != std::string::npos;
  return (v6 ? "[" + target.host + "]" : target.host) + ":" + std::to_string(target.port);
}

awaitable<void> refuse(ProxyShared& shared, tcp::socket& client, const ProxyTarget& target, const std::string& why) {
  shared.report(target.host, target.port, why);
  co_await send_and_close(client, reply(403, "Forbidden", "deskd refused " + shown(target) + ": " + why));
}

policy::NetworkAddress network_address(const asio::ip::address& address) {
  policy::NetworkAddress converted;
  if (address.is_v4()) {
    const auto bytes = address.to_v4().to_bytes();
    converted = policy::NetworkAddress::v4({bytes[0], bytes[1], bytes[2], bytes[3]});
  } else {
    converted.is_v4 = false;
    const auto bytes = address.to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), converted.bytes.begin());
  }
  return converted;
}

struct Destinations {
  std::vector<tcp::endpoint> allowed;  // in the resolver's order, each checked
  std::string refused_why;             // why the first refused one was refused
  std::string failure;                 // resolution failed: why (no refusal)
};

awaitable<Destinations> resolve_and_check(ProxyShared& shared, const ProxyTarget& target) {
  Destinations destinations;
  std::vector<tcp::endpoint> candidates;
  boost::system::error_code parse_error;
  const auto literal = asio::ip::make_address(target.host, parse_error);
  if (!parse_error) {
    candidates.emplace_back(literal, target.port);
  } else {
    tcp::resolver resolver(shared.executor);
    auto outcome = co_await (resolver.async_resolve(target.host, std::to_string(target.port),
                                                    tcp::resolver::numeric_service, kAwait) ||
                             expire_after(shared.settings.resolve_timeout));
    if (outcome.index() == 1) {
      destinations.failure = "resolving " + target.host + " took too long";
      co_return destinations;
    }
    auto [error, results] = std::get<0>(std::move(outcome));
    if (error) {
      destinations.failure = "resolving " + target.host + " failed: " + error.message();
      co_return destinations;
    }
    for (const auto& entry : results) candidates.push_back(entry.endpoint());
  }
  for (const auto& candidate : candidates) {
    const auto address = network_address(candidate.address());
    if (auto why = policy::refused_destination(shared.settings.allowlist, address, target.port)) {
      if (destinations.refused_why.empty()) {
        const std::string kind = (why->front() == 'u' ? "an " : "a ") + *why + " address";
        destinations.refused_why = (parse_error ? "resolves to " + address.text() + ", " + kind
                                                : address.text() + " is " + kind) +
                                   " (name it in allowed_hosts to allow it)";
      }
      continue;
    }
    if (std::find(destinations.allowed.begin(), destinations.allowed.end(), candidate) == destinations.allowed.end()) {
      destinations.allowed.push_back(candidate);
    }
  }
  co_return destinations;
}

// Connects to the first of `allowed` that answers: exactly the endpoints that were checked.
awaitable<std::optional<tcp::socket>> connect_checked(ProxyShared& shared, const std::vector<tcp::endpoint>& allowed) {
  for (const auto& endpoint : allowed) {
    tcp::socket upstream(shared.executor);
    auto outcome = co_await (upstream.async_connect(endpoint, kAwait) || expire_after(shared.settings.connect_timeout));
    if (outcome.index() == 0 && !std::get<0>(std::get<0>(outcome))) {
      co_return std::optional<tcp::socket>(std::move(upstream));
    }
  }
  co_return std::nullopt;
}

bool is_hop_by_hop(std::string_view name) {
  for (std::string_view hop : {"connection", "proxy-connection", "keep-alive", "proxy-authorization",
                               "proxy-authenticate", "te", "trailer", "upgrade", "host"}) {
    if (boost::beast::iequals(name, hop)) return true;
  }
  return false;
}

// The plain request as the origin gets it: origin-form target, its own Host, no hop-by-hop
// headers, and "Connection: close" so that one forwarded connection carries one request.
std::string origin_request_head(const http::request<http::empty_body>& request, const ProxyTarget& target) {
  std::string head = std::string(request.method_string()) + " " + target.origin_target + " HTTP/" +
                     std::to_string(request.version() / 10) + "." + std::to_string(request.version() % 10) + "\r\n";
  head += "Host: " + target.authority + "\r\n";
  for (const auto& field : request) {
    if (is_hop_by_hop(field.name_string())) continue;
    head.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
  }
  head += "Connection: close\r\n\r\n";
  return head;
}

}  // namespace

namespace {

// The request head of a proxy-port connection and the target it names; nullopt once the
// client has been answered (400, 408) or has gone.
struct ProxyHead {
  http::request<http::empty_body> request;
  ProxyTarget target;
};

awaitable<std::optional<ProxyHead>> read_proxy_head(tcp::socket& client,
                                                   boost::beast::flat_buffer& buffer,
                                                   std::chrono::milliseconds timeout) {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(kMaximumRequestHeadBytes);
  auto head = co_await (http::async_read_header(client, buffer, parser, kAwait) || expire_after(timeout));
  if (head.index() == 1) {
    co_await send_and_close(client, reply(408, "Request Timeout", "deskd: the request head did not come in time"));
    co_return std::nullopt;
  }
  if (auto [error, ignored] = std::get<0>(head); error) {
    if (error != http::error::end_of_stream && error != asio::error::eof) {
      co_await send_and_close(client, reply(400, "Bad Request", "deskd: not an HTTP proxy request (" + error.message() + ")"));
    }
    co_return std::nullopt;
  }
  auto target = parse_proxy_target(parser.get().method_string(), parser.get().target());
  if (!target.ok()) {
    co_await send_and_close(client, reply(400, "Bad Request", "deskd: " + target.error().what));
    co_return std::nullopt;
  }
  co_return ProxyHead{parser.release(), std::move(target).value()};
}

// Closes a connection to a name's address that cannot be served: there is no HTTP in which
// to answer (the tool sees the connection end; the event says why).
void close_quietly(tcp::socket& client) {
  boost::system::error_code ignored;
  client.close(ignored);
}

// How the client is answered: HTTP (a proxy request), SOCKS5, or not at all (a connection
// to a name's address, which carries no protocol of deskd's).
enum class Answer { http, socks, none };

// A refusal: a 403, SOCKS5's "not allowed by ruleset", or the connection closed.
awaitable<void> refuse_or_close(ProxyShared& shared, tcp::socket& client, const ProxyTarget& target, Answer answer,
                                std::string why) {
  if (answer == Answer::http) {
    co_await refuse(shared, client, target, why);
    co_return;
  }
  shared.report(target.host, target.port, why);
  if (answer == Answer::socks) co_await send_socks_reply(client, SocksReply::not_allowed);
  close_quietly(client);
}

// A failure that is no refusal (resolution, connection): a 502, SOCKS5's "host
// unreachable", or the connection closed.
awaitable<void> fail_or_close(tcp::socket& client, Answer answer, std::string why) {
  if (answer == Answer::http) {
    co_await send_and_close(client, reply(502, "Bad Gateway", "deskd: " + why));
    co_return;
  }
  if (answer == Answer::socks) co_await send_socks_reply(client, SocksReply::host_unreachable);
  close_quietly(client);
}

// A connection for a gated origin goes to the desk's API gate once opened as the client
// asked (a CONNECT's 200, SOCKS5's success; a plain request is handed over whole).
awaitable<void> serve_gated(ProxyShared& shared, tcp::socket client, const ProxyTarget& target, Answer answers,
                            const http::request<http::empty_body>* head, boost::beast::flat_buffer& buffer,
                            const GatedApi& api) {
  std::string already;
  if (answers == Answer::http && head != nullptr) {
    if (target.tunnel) {
      const std::string_view established = "HTTP/1.1 200 Connection established\r\n\r\n";
      if (auto [error, written] = co_await asio::async_write(client, asio::buffer(established), kAwait); error) co_return;
    } else {
      // The gate reads the request again, in origin form, with the Host the desk gave.
      already = std::string(head->method_string()) + " " + target.origin_target + " HTTP/1.1\r\n";
      for (const auto& field : *head) {
        if (boost::beast::iequals(field.name_string(), "proxy-connection")) continue;
        already.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
      }
      already += "\r\n";
    }
  }
  if (answers == Answer::socks) co_await send_socks_reply(client, SocksReply::succeeded);
  const auto data = buffer.data();
  already.append(static_cast<const char*>(data.data()), data.size());
  buffer.consume(buffer.size());
  auto& gate = *shared.settings.gate;
  // `shared` outlives the connection (serve_counted holds it).
  co_await gate.serve(std::move(client), api, gate.origin_for(api, target.host, target.port), std::move(already),
                      [&shared](std::uint64_t bytes) { return shared.charge(bytes); });
}

// The checks, the connection to the origin and the relay, for an HTTP proxy request (`head`,
// Answer::http), a SOCKS5 CONNECT, or a connection to a name's address (Answer::none).
awaitable<void> serve_target(ProxyShared& shared, tcp::socket& client, const ProxyTarget& target, Answer answers,
                             const http::request<http::empty_body>* head, boost::beast::flat_buffer& buffer) {
  if (shared.settings.gate) {
    if (const auto* api = shared.settings.gate->api_for(target.host, target.port)) {
      co_await serve_gated(shared, std::move(client), target, answers, head, buffer, *api);
      co_return;
    }
    // A placeholder in the clear on its way to a place not gated for it: a leak attempt.
    // This covers the head and what came with it; the relay watches the rest.
    {
      const auto data = buffer.data();
      const std::string seen = (answers == Answer::http && head != nullptr && !target.tunnel
                                    ? origin_request_head(*head, target)
                                    : std::string()) +
                               std::string(static_cast<const char*>(data.data()), data.size());
      if (auto leaked = shared.settings.gate->placeholder_in(seen)) {
        co_await refuse_or_close(shared, client, target, answers,
                                 "the request carries the placeholder of " + *leaked +
                                     ", which only its API's origins may get: a leak attempt");
        co_return;
      }
    }
  }
  if (!shared.settings.allowlist.allows_host(target.host, target.port)) {
    co_await refuse_or_close(shared, client, target, answers, "not in allowed_hosts");
    co_return;
  }
  if (shared.bytes_used.load() >= shared.settings.limits.bytes) {
    co_await refuse_or_close(shared, client, target, answers,
                             "the desk's egress byte budget (" + std::to_string(shared.settings.limits.bytes >> 20) +
                                 " MiB, egress_mb) is spent");
    co_return;
  }
  const Destinations destinations = co_await resolve_and_check(shared, target);
  if (!destinations.failure.empty()) {
    if (shared.settings.outcomes) shared.settings.outcomes(EgressOutcome::failed);
    co_await fail_or_close(client, answers, destinations.failure);
    co_return;
  }
  if (destinations.allowed.empty()) {
    // Named first: g++ 12 destroys a conditional's temporary twice inside a co_await.
    std::string why = destinations.refused_why.empty() ? std::string("the name has no address") : destinations.refused_why;
    co_await refuse_or_close(shared, client, target, answers, why);
    co_return;
  }
  auto upstream = co_await connect_checked(shared, destinations.allowed);
  if (!upstream) {
    if (shared.settings.outcomes) shared.settings.outcomes(EgressOutcome::failed);
    co_await fail_or_close(client, answers, "could not connect to " + shown(target));
    co_return;
  }
  if (shared.settings.outcomes) shared.settings.outcomes(EgressOutcome::allowed);
  if (answers == Answer::socks) co_await send_socks_reply(client, SocksReply::succeeded);
  if (answers == Answer::http && head != nullptr) {
    const std::string opening = target.tunnel ? std::string("HTTP/1.1 200 Connection established\r\n\r\n")
                                              : origin_request_head(*head, target);
    auto& opening_socket = target.tunnel ? client : *upstream;
    if (auto [error, written] = co_await asio::async_write(opening_socket, asio::buffer(opening), kAwait); error) {
      co_return;
    }
  }
  // What the client sent after the head (a body, or the start of TLS) goes on first.
  if (buffer.size() > 0) {
    if (!shared.charge(buffer.size())) co_return;
    if (auto [error, written] = co_await asio::async_write(*upstream, buffer.data(), kAwait); error) co_return;
    buffer.consume(buffer.size());
  }
  co_await relay_both_ways(shared, client, *upstream, target.host, target.port);
}

}  // namespace

awaitable<void> serve_proxy_connection(std::shared_ptr<ProxyShared> shared, tcp::socket client) {
  boost::beast::flat_buffer buffer(kMaximumRequestHeadBytes);
  // SOCKS5 opens with its version byte, 5; an HTTP request with a method's letter.
  std::uint8_t first = 0;
  auto peeked = co_await (client.async_receive(asio::buffer(&first, 1), tcp::socket::message_peek, kAwait) ||
                          expire_after(shared->settings.head_timeout));
  if (peeked.index() == 0 && !std::get<0>(std::get<0>(peeked)) && first == 0x05) {
    auto target = co_await read_socks_request(client, shared->settings.head_timeout);
    if (!target) co_return;
    co_await serve_target(*shared, client, *target, Answer::socks, nullptr, buffer);
    co_return;
  }
  auto head = co_await read_proxy_head(client, buffer, shared->settings.head_timeout);
  if (!head) co_return;
  co_await serve_target(*shared, client, head->target, Answer::http, &head->request, buffer);
}

awaitable<void> serve_name_connection(std::shared_ptr<ProxyShared> shared, tcp::socket client, std::string name,
                                      std::uint16_t port) {
  boost::beast::flat_buffer nothing;
  ProxyTarget target;
  target.tunnel = true;
  target.host = std::move(name);
  target.port = port;
  co_await serve_target(*shared, client, target, Answer::none, nullptr, nothing);
}

awaitable<void> refuse_proxy_connection(std::shared_ptr<ProxyShared> shared, tcp::socket client, std::string why) {
  const auto timeout = shared->settings.over_limit_head_timeout;
  std::uint8_t first = 0;
  auto peeked = co_await (client.async_receive(asio::buffer(&first, 1), tcp::socket::message_peek, kAwait) ||
                          expire_after(timeout));
  if (peeked.index() == 0 && !std::get<0>(std::get<0>(peeked)) && first == 0x05) {
    auto target = co_await read_socks_request(client, timeout);
    shared->report(target ? target->host : "", target ? target->port : 0, why);
    if (target) co_await send_socks_reply(client, SocksReply::not_allowed);
    close_quietly(client);
    co_return;
  }
  boost::beast::flat_buffer buffer(kMaximumRequestHeadBytes);
  http::request_parser<http::empty_body> parser;
  parser.header_limit(kMaximumRequestHeadBytes);
  auto head = co_await (http::async_read_header(client, buffer, parser, kAwait) ||
                        expire_after(timeout));
  if (head.index() == 0 && !std::get<0>(std::get<0>(head))) {
    if (auto target = parse_proxy_target(parser.get().method_string(), parser.get().target()); target.ok()) {
      co_await refuse(*shared, client, *target, why);
      co_return;
    }
  }
  shared->report("", 0, why);
  co_await send_and_close(client, reply(403, "Forbidden", "deskd refused the connection: " + why));
}

}  // namespace deskd::egress
