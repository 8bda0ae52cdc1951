#pragma once
// A small blocking HTTP/1.1 client for the web page's end-to-end tests: requests written
// as raw bytes (so that a test can send what no browser would: oversized headers, forged
// origins), replies read with their Content-Length, event streams read as they come; over
// deskd's web socket, TCP, or TLS (OpenSSL, the test's own certificate, not verified).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deskd::e2e {

using namespace std::chrono_literals;

struct HttpReply {
  int status = 0;
  std::string head;  ///< the status line and headers, as sent
  std::string body;
  /// The value of header `name` (case-blind); "" when absent.
  std::string header(std::string_view name) const;
};

/// One request's bytes: `METHOD TARGET HTTP/1.1`, Host, the headers, Content-Length when
/// there is a body.
std::string http_request(std::string_view method, std::string_view target,
                         const std::vector<std::pair<std::string, std::string>>& headers = {},
                         std::string_view body = {}, std::string_view host = "localhost");

class WebClient {
 public:
  static WebClient unix_socket(const std::string& path);
  static WebClient tcp(int port);
  static WebClient tls(int port);
  ~WebClient();
  WebClient(WebClient&& other) noexcept;
  WebClient(const WebClient&) = delete;
  WebClient& operator=(const WebClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool send(std::string_view bytes);
  /// The next reply; nullopt when none came whole within `timeout`.
  std::optional<HttpReply> read_reply(std::chrono::milliseconds timeout = 30s);
  /// Sends one request and reads its reply.
  std::optional<HttpReply> exchange(std::string_view request, std::chrono::milliseconds timeout = 30s);
  /// Reads until what was received holds `marker` (or the timeout, or the end); returns it all.
  std::string read_until(std::string_view marker, std::chrono::milliseconds timeout = 30s);
  /// Whether the server closed the connection within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = 10s);

 private:
  WebClient() = default;
  // Up to `timeout` for some bytes; false at the end, an error or the timeout.
  bool receive_more(std::chrono::milliseconds timeout);

  int fd_ = -1;
  void* tls_context_ = nullptr;  // SSL_CTX*
  void* tls_ = nullptr;          // SSL*
  std::string received_;
  bool ended_ = false;
};

/// What uid `uid` receives from the Unix socket `path` after sending `request` (the first
/// 4 KiB or what came before the server closed); "cannot ..." when it could not connect.
std::string http_as_other_user(const std::string& path, uid_t uid, const std::string& request);

/// A self-signed certificate and key for "localhost"/127.0.0.1 written as PEM files.
bool write_test_certificate(const std::string& certificate_file, const std::string& key_file);

}  // namespace deskd::e2e
