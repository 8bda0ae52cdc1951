#include "runner/config/config_web.h"

#include <arpa/inet.h>

#include <charconv>

#include "runner/config/config_values.h"

namespace deskd::app::config_detail {

namespace {

bool ipv4_loopback(const std::string& host) {
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

bool is_ip_address(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

}  // namespace

std::optional<WebListenAddress> parse_web_listen(std::string_view text) {
  std::string host = "127.0.0.1";
  std::string_view port_text = text;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else if (const std::size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    if (colon > 0) host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (host == "localhost") host = "127.0.0.1";
  unsigned port = 0;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return std::nullopt;
  }
  if (!is_ip_address(host)) return std::nullopt;
  return WebListenAddress{host, static_cast<std::uint16_t>(port), ipv4_loopback(host) || host == "::1"};
}

void read_runner_web(TableReader& reader, RunnerConfig& runner, LoadContext& context) {
  // web_socket: beside the control socket unless named; "" turns it off.
  const toml::node* socket_node = reader.find("web_socket");
  if (socket_node == nullptr) {
    runner.web_socket_path = runner.socket_path.parent_path() / "web.sock";
  } else if (const auto* text = socket_node->as_string(); text != nullptr && text->get().empty()) {
    runner.web_socket_path.clear();
  } else if (auto socket = reader.path("web_socket", "deskd's web socket")) {
    if (socket->path.native().size() > kMaximumSocketPathBytes) {
      context.problems.add(socket->position, "the web socket path " + socket->path.native() +
                                                 " is too long for a Unix socket (at most " +
                                                 std::to_string(kMaximumSocketPathBytes) + " bytes)");
    }
    if (socket->path == runner.socket_path) {
      context.problems.add(socket->position, "'web_socket' must not be the control socket's path");
    }
    runner.web_socket_path = socket->path;
  }
  if (!runner.web_socket_path.empty()) {
    PlacedPath hidden{runner.web_socket_path, reader.position(), "deskd's web socket"};
    hidden.socket = true;
    context.daemon_paths.push_back(std::move(hidden));
  }

  std::optional<WebListenAddress> listen;
  const toml::node* listen_node = reader.find("web_listen");
  if (listen_node != nullptr) {
    const auto* text = listen_node->as_string();
    if (text == nullptr) {
      reader.problem(*listen_node, "'web_listen' must be a string such as \"127.0.0.1:8080\"");
    } else if (!text->get().empty()) {
      listen = parse_web_listen(text->get());
      if (!listen) {
        reader.problem(*listen_node, "'web_listen' must be \"IP:PORT\", \"[IPv6]:PORT\" or \":PORT\" (loopback), not " +
                                         in_quotes(text->get()));
      } else {
        runner.web_listen_host = listen->host;
        runner.web_listen_port = listen->port;
      }
    }
  }
  auto certificate = reader.path("web_tls_cert", "the web TLS certificate");
  auto key = reader.path("web_tls_key", "the web TLS key");
  if (certificate) runner.web_tls_cert = certificate->path;
  if (key) {
    runner.web_tls_key = key->path;
    context.daemon_paths.push_back(*key);  // no desk reads the key
  }
  if (certificate.has_value() != key.has_value()) {
    context.problems.add(certificate ? certificate->position : key->position,
                         "'web_tls_cert' and 'web_tls_key' go together: give both or neither");
  }
  if ((certificate || key) && !listen) {
    context.problems.add(certificate ? certificate->position : key->position,
                         "'web_tls_cert' and 'web_tls_key' are for 'web_listen', which is not set");
  }
  if (listen && !listen->loopback && !(certificate && key)) {
    reader.problem(*listen_node, "'web_listen' " + in_quotes(listen->host) +
                                     " is not a loopback address: it needs 'web_tls_cert' and 'web_tls_key' (the "
                                     "login and every page would cross the network in the clear)");
  }
}

}  // namespace deskd::app::config_detail
