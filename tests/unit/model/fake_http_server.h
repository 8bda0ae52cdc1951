#pragma once
// FakeHttpServer: a scripted HTTP/1.1 server on 127.0.0.1, for the HTTP client's and the
// model providers' tests. It runs on its own thread and io_context, listens on a port the
// kernel picks, records every request, and answers each one with the next scripted
// response (or the fallback responder, or a 500 saying nothing was scripted).
//
//   FakeHttpServer server;                                   // or FakeHttpServer({.tls = true})
//   server.enqueue(FakeResponse::json(200, R"({"ok":true})"));
//   server.enqueue(FakeResponse::event_stream({{"event: a\ndata: 1\n\n"},
//                                              {"data: 2\n\n", std::chrono::milliseconds(200)}}));
//   ... send to server.url("/v1/messages") (with HttpSettings::ca_file = server.ca_file()
//   for TLS) ...
//   EXPECT_EQ(server.requests().at(0).header("x-api-key"), "k");
//
// With TLS, a throwaway CA and a server certificate are generated at construction with the
// OpenSSL API (P-256 keys), and the CA is written as PEM under /var/tmp (removed when the
// server goes). FakeConnectProxy is a CONNECT proxy to put in HTTPS_PROXY.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deskd::model::testing {

/// A piece of a response body, sent after waiting `delay` (counted from the previous piece).
struct BodyPiece {
  std::string data;
  std::chrono::milliseconds delay{0};
};

struct FakeResponse {
  enum class Framing {
    content_length,  ///< Content-Length: the pieces' total
    chunked,         ///< one chunk per non-empty piece, then the last chunk
    until_close,     ///< no length: the body ends when the server closes
  };

  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  ///< besides the framing ones
  std::vector<BodyPiece> pieces;
  Framing framing = Framing::content_length;
  bool keep_alive = true;       ///< false: answers "Connection: close", then closes
  bool close_silently = false;  ///< closes after this response without saying so (a stale keep-alive)
  bool stall = false;           ///< after the pieces: sends nothing more, keeps the connection open
  bool close_mid_body = false;  ///< after the pieces: closes before the body is complete
  /// When set, sent as is instead of a head and pieces (malformed answers), then closes.
  std::optional<std::string> raw_bytes;

  /// A whole JSON body with Content-Length.
  static FakeResponse json(unsigned status, std::string body);
  /// A text/event-stream body, chunked, one chunk per piece.
  static FakeResponse event_stream(std::vector<BodyPiece> pieces);
};

struct RecordedRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// The first header of that name (case-insensitive).
  std::optional<std::string> header(std::string_view name) const;
};

struct FakeServerOptions {
  bool tls = false;
  /// The server certificate's name (subjectAltName DNS; plus IP 127.0.0.1 for "localhost").
  /// Another name makes a certificate that does not match "localhost".
  std::string certificate_host = "localhost";
};

class FakeHttpServer {
 public:
  explicit FakeHttpServer(FakeServerOptions options = FakeServerOptions{});
  ~FakeHttpServer();
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  /// Adds a response; responses answer requests in order, across connections.
  void enqueue(FakeResponse response);
  /// Answers requests once the queue is empty.
  void set_fallback(std::function<FakeResponse(const RecordedRequest&)> responder);

  std::uint16_t port() const;
  /// "http://127.0.0.1:PORT" + target, or "https://localhost:PORT" + target with TLS.
  std::string url(std::string_view target = "/") const;
  /// The CA certificate (PEM) that signed the server's; empty without TLS.
  std::filesystem::path ca_file() const;

  /// Every request received so far, in order (thread-safe).
  std::vector<RecordedRequest> requests() const;
  /// Connections accepted so far (TCP, before any TLS handshake).
  std::size_t connections_accepted() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A CONNECT proxy on 127.0.0.1: records each CONNECT request head, connects to the target
/// and pipes bytes both ways; or, with a status other than 200, refuses with that status.
class FakeConnectProxy {
 public:
  explicit FakeConnectProxy(unsigned status = 200);
  ~FakeConnectProxy();
  FakeConnectProxy(const FakeConnectProxy&) = delete;
  FakeConnectProxy& operator=(const FakeConnectProxy&) = delete;

  std::uint16_t port() const;
  /// "http://127.0.0.1:PORT", for HTTPS_PROXY.
  std::string url() const;
  /// Tunnels CONNECT requests for `host` (any port) to 127.0.0.1:`port` instead of
  /// resolving it, so a test can use a name only the proxy knows (e.g. "api.deskd.test").
  void route(std::string host, std::uint16_t port);
  /// The head of each CONNECT request ("CONNECT host:port HTTP/1.1\r\nHost: ...\r\n\r\n").
  std::vector<std::string> connect_requests() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace deskd::model::testing
