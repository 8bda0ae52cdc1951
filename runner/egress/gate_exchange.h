#pragma once
// The gate's side of one desk connection to a gated origin: its API, its origin, its
// kept-alive connection upstream, and what each request leaves (ledger lines, events).
// Private to runner/egress/ (a friend of ApiGate).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "runner/egress/api_gate.h"
#include "runner/egress/api_request.h"

namespace deskd::egress {

/// The server's end upstream: a TLS stream or a plain socket, made when first needed and
/// kept for the requests after.
using Upstream =
    std::variant<std::monostate, boost::asio::ip::tcp::socket, boost::asio::ssl::stream<boost::asio::ip::tcp::socket>>;

struct GateExchange {
  ApiGate& gate;
  const GatedApi& api;
  const policy::ApiOrigin& origin;
  std::size_t api_index = 0;
  ApiGate::Charge charge;
  Upstream upstream;

  bool within_budget(std::uint64_t bytes) const { return !charge || charge(bytes); }

  const ApiGateSettings& settings() const { return gate.settings_; }

  LedgerEntry entry_for(const ApiHttpRequest& request, const std::string& digest, std::size_t size) const;

  // The line goes first: a request is never sent without it. A ledger that cannot be written
  // stops the request (fail closed).
  bool record(LedgerEntry entry);

  boost::json::object event_data(const LedgerEntry& entry) const;

  void refused(LedgerEntry entry, const std::string& why);

  void called(const LedgerEntry& entry);

  // What the rules say, under the gate's lock (the books count).
  policy::ApiDecision decide(const ApiHttpRequest& request);

  // Another API's placeholder in this request: a leak attempt.
  std::optional<std::string> foreign_placeholder(std::string_view bytes) const;

  boost::asio::awaitable<std::optional<std::string>> connect_upstream();

  // Sends `request` upstream and reads the response; the error sentence when that failed.
  boost::asio::awaitable<std::variant<ApiHttpResponse, std::string>> exchange(ApiHttpRequest& request);
};

}  // namespace deskd::egress
