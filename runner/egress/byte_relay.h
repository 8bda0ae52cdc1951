#pragma once
// The bytes of one proxied connection, both ways, after its opening: moved by the kernel
// (splice through a pipe per direction) so that the proxy keeps up with a direct
// connection, every byte counted against the desk's budget. Private to runner/egress/.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <string>

namespace deskd::egress {

struct ProxyShared;

/// Relays `client` <-> `upstream` until both directions end. For a desk that holds
/// placeholders (an API gate), what the desk sends is searched for them on its way: one
/// found closes both (reported as a leak attempt). An end of stream is passed
/// on (shutdown of the other side's sending); an error or a spent budget (reported once as a
/// refusal of `host`:`port`) closes both, and so does silence both ways for the desk's
/// egress_idle_seconds.
boost::asio::awaitable<void> relay_both_ways(ProxyShared& shared, boost::asio::ip::tcp::socket& client,
                                             boost::asio::ip::tcp::socket& upstream, std::string host,
                                             std::uint16_t port);

}  // namespace deskd::egress
