#include "runner/egress/socks_request.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <string>

#include "base/asio_await.h"
#include "policy/egress_allowlist.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

constexpr std::uint8_t kVersion = 0x05;

// Reads exactly `bytes` into `into`; false on an error or the end of the stream.
awaitable<bool> read_exactly(tcp::socket& client, std::uint8_t* into, std::size_t bytes) {
  auto [error, count] = co_await asio::async_read(client, asio::buffer(into, bytes), kAwait);
  co_return !error && count == bytes;
}

// The greeting and the request, unbounded in time (the caller bounds it).
awaitable<std::optional<ProxyTarget>> read_both(tcp::socket& client) {
  std::array<std::uint8_t, 256> bytes{};
  if (!co_await read_exactly(client, bytes.data(), 2) || bytes[0] != kVersion) co_return std::nullopt;
  const std::size_t methods = bytes[1];
  if (!co_await read_exactly(client, bytes.data(), methods)) co_return std::nullopt;
  const bool no_authentication = std::find(bytes.begin(), bytes.begin() + methods, 0x00) != bytes.begin() + methods;
  const std::array<std::uint8_t, 2> choice{kVersion, static_cast<std::uint8_t>(no_authentication ? 0x00 : 0xFF)};
  if (auto [error, written] = co_await asio::async_write(client, asio::buffer(choice), kAwait); error) {
    co_return std::nullopt;
  }
  if (!no_authentication) co_return std::nullopt;
  // VER CMD RSV ATYP, then the address and the port.
  if (!co_await read_exactly(client, bytes.data(), 4) || bytes[0] != kVersion) co_return std::nullopt;
  const std::uint8_t command = bytes[1];
  const std::uint8_t type = bytes[3];
  ProxyTarget target;
  target.tunnel = true;
  if (type == 0x01 || type == 0x04) {
    const std::size_t length = type == 0x01 ? 4 : 16;
    if (!co_await read_exactly(client, bytes.data(), length)) co_return std::nullopt;
    if (type == 0x01) {
      target.host = asio::ip::make_address_v4(asio::ip::address_v4::bytes_type{bytes[0], bytes[1], bytes[2], bytes[3]})
                        .to_string();
    } else {
      asio::ip::address_v6::bytes_type raw{};
      std::copy(bytes.begin(), bytes.begin() + 16, raw.begin());
      target.host = asio::ip::make_address_v6(raw).to_string();
    }
  } else if (type == 0x03) {
    if (!co_await read_exactly(client, bytes.data(), 1)) co_return std::nullopt;
    const std::size_t length = bytes[0];
    if (length == 0 || !co_await read_exactly(client, bytes.data(), length)) co_return std::nullopt;
    target.host.assign(reinterpret_cast<const char*>(bytes.data()), length);
  } else {
    co_await send_socks_reply(client, SocksReply::address_type_not_supported);
    co_return std::nullopt;
  }
  if (!co_await read_exactly(client, bytes.data(), 2)) co_return std::nullopt;
  target.port = static_cast<std::uint16_t>((bytes[0] << 8) | bytes[1]);
  if (command != 0x01) {  // BIND and UDP ASSOCIATE would open the desk to the outside
    co_await send_socks_reply(client, SocksReply::command_not_supported);
    co_return std::nullopt;
  }
  if (target.port == 0 || (type == 0x03 && !policy::normalized_host_name(target.host))) {
    co_await send_socks_reply(client, SocksReply::general_failure);
    co_return std::nullopt;
  }
  co_return target;
}

}  // namespace

awaitable<void> send_socks_reply(tcp::socket& client, SocksReply code) {
  const std::array<std::uint8_t, 10> reply{kVersion, static_cast<std::uint8_t>(code), 0x00, 0x01, 0, 0, 0, 0, 0, 0};
  (void)co_await asio::async_write(client, asio::buffer(reply), kAwait);
}

awaitable<std::optional<ProxyTarget>> read_socks_request(tcp::socket& client, std::chrono::milliseconds timeout) {
  auto outcome = co_await (read_both(client) || expire_after(timeout));
  if (outcome.index() == 1) co_return std::nullopt;
  co_return std::get<0>(std::move(outcome));
}

}  // namespace deskd::egress
