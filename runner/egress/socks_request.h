#pragma once
// SOCKS5 (RFC 1928) on the desk's proxy port, for tools that speak only SOCKS
// (socks5h://127.0.0.1:3128): no authentication, CONNECT only, to a name (ATYP 3, the
// socks5h form: deskd resolves) or an address literal. The target then goes through the
// same checks as an HTTP CONNECT (proxy_session.cpp). Private to runner/egress/.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

#include "runner/egress/proxy_request.h"

namespace deskd::egress {

/// SOCKS5 reply codes deskd sends (RFC 1928 section 6).
enum class SocksReply : std::uint8_t {
  succeeded = 0x00,
  general_failure = 0x01,
  not_allowed = 0x02,  ///< "connection not allowed by ruleset": every refusal
  host_unreachable = 0x04,
  command_not_supported = 0x07,
  address_type_not_supported = 0x08,
};

/// Reads the greeting (answering "no authentication", or 0xFF when the client does not
/// offer it) and the request, within `timeout` for both. Returns the target (a tunnel), or
/// nullopt once the client has been answered with an error, or has gone.
boost::asio::awaitable<std::optional<ProxyTarget>> read_socks_request(boost::asio::ip::tcp::socket& client,
                                                                      std::chrono::milliseconds timeout);

/// Sends `code` with an empty bound address (0.0.0.0:0).
boost::asio::awaitable<void> send_socks_reply(boost::asio::ip::tcp::socket& client, SocksReply code);

}  // namespace deskd::egress
