#pragma once
// What the connections of one desk's egress proxy share: the settings, the sink, and the
// counters the limits are checked against. Private to runner/egress/.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "policy/egress_names.h"
#include "runner/egress/egress_proxy.h"
#include "runner/egress/report_limiter.h"

namespace deskd::egress {

struct ProxyShared {
  boost::asio::any_io_executor executor;
  EgressSettings settings;
  RefusalSink sink;
  /// The exact allowed names on their loopback addresses (from settings.allowlist).
  std::vector<policy::EgressName> names;
  std::atomic<std::uint64_t> open_connections{0};
  /// Connections over the limit still being read for their request head (bounded).
  std::atomic<std::uint64_t> refusing{0};
  std::atomic<std::uint64_t> bytes_used{0};

  /// Reports a refusal to the sink, within the rate limit.
  void report(std::string host, std::uint16_t port, std::string why);
  /// Counts `bytes` against the byte budget; false once it is spent.
  bool charge(std::uint64_t bytes);

 private:
  ReportLimiter reports_{kRefusalReportsPerMinute};
};

/// Serves one connection the forwarder handed over on the proxy port, to its end.
boost::asio::awaitable<void> serve_proxy_connection(std::shared_ptr<ProxyShared> shared,
                                                    boost::asio::ip::tcp::socket client);

/// Serves one connection made to an allowed name's loopback address (policy/egress_names.h):
/// a tunnel to `name`:`port`, checked as a CONNECT to it is, with no HTTP at all (a refusal
/// closes the connection; the event says why).
boost::asio::awaitable<void> serve_name_connection(std::shared_ptr<ProxyShared> shared,
                                                   boost::asio::ip::tcp::socket client, std::string name,
                                                   std::uint16_t port);

/// A proxy-port connection over the connection limit: its request (HTTP or SOCKS5) is read
/// (bounded in bytes and time) so that the refusal names the host and port asked for, then
/// refused.
boost::asio::awaitable<void> refuse_proxy_connection(std::shared_ptr<ProxyShared> shared,
                                                     boost::asio::ip::tcp::socket client, std::string why);

}  // namespace deskd::egress
