#pragma once
// Private to the config loader: the [runner] keys of the web page (docs/WEB.md) —
// web_socket, web_listen, web_tls_cert, web_tls_key — read and checked in one place.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runner/config/config.h"
#include "runner/config/config_reader.h"

namespace deskd::app::config_detail {

struct WebListenAddress {
  std::string host;  ///< an IP address ("127.0.0.1", "::1", "0.0.0.0")
  std::uint16_t port = 0;
  bool loopback = false;
};

/// "host:port", "[v6]:port", ":port" or "port" (loopback 127.0.0.1); "localhost" is
/// 127.0.0.1. Other names are refused: what is bound must be what the config says.
std::optional<WebListenAddress> parse_web_listen(std::string_view text);

/// Reads the web keys of [runner] into `runner` (after `socket`, whose folder holds the
/// default web_socket). A non-loopback web_listen without both web_tls_cert and
/// web_tls_key is a problem at web_listen.
void read_runner_web(TableReader& reader, RunnerConfig& runner, LoadContext& context);

}  // namespace deskd::app::config_detail
