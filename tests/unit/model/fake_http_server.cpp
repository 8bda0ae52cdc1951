#include "unit/model/fake_http_server.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "base/asio_await.h"

namespace deskd::model::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using asio::ip::tcp;

namespace {

// ---- Certificates, made fresh for each TLS server ----------------------------------------

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertificateFree {
  void operator()(X509* certificate) const { X509_free(certificate); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Certificate = std::unique_ptr<X509, CertificateFree>;

void check(bool ok, const char* step) {
  if (!ok) throw std::runtime_error(std::string("making the test certificate failed at ") + step);
}

Key make_key() {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  return key;
}

void add_extension(X509* certificate, X509V3_CTX* context, int nid, const std::string& value) {
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, context, nid, value.c_str());
  check(extension != nullptr, "X509V3_EXT_conf_nid");
  check(X509_add_ext(certificate, extension, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(extension);
}

// A CA certificate when `issuer` is null (self-signed), else a server certificate for `host`.
Certificate make_certificate(EVP_PKEY* key, const std::string& common_name, X509* issuer, EVP_PKEY* issuer_key,
                             const std::string& host, long serial) {
  Certificate certificate(X509_new());
  check(certificate != nullptr, "X509_new");
  X509* raw = certificate.get();
  check(X509_set_version(raw, 2) == 1, "X509_set_version");
  check(ASN1_INTEGER_set(X509_get_serialNumber(raw), serial) == 1, "serial");
  check(X509_gmtime_adj(X509_getm_notBefore(raw), -3600) != nullptr, "notBefore");
  check(X509_gmtime_adj(X509_getm_notAfter(raw), 24 * 3600) != nullptr, "notAfter");
  check(X509_set_pubkey(raw, key) == 1, "X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(raw);
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()),
                                   -1, -1, 0) == 1,
        "subject");
  check(X509_set_issuer_name(raw, issuer != nullptr ? X509_get_subject_name(issuer) : name) == 1, "issuer");

  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer != nullptr ? issuer : raw, raw, nullptr, nullptr, 0);
  add_extension(raw, &context, NID_subject_key_identifier, "hash");
  if (issuer == nullptr) {
    add_extension(raw, &context, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(raw, &context, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_extension(raw, &context, NID_authority_key_identifier, "keyid:always");
    add_extension(raw, &context, NID_basic_constraints, "critical,CA:FALSE");
    add_extension(raw, &context, NID_key_usage, "critical,digitalSignature");
    add_extension(raw, &context, NID_ext_key_usage, "serverAuth");
    std::string names = "DNS:" + host;
    if (host == "localhost") names += ",IP:127.0.0.1";
    add_extension(raw, &context, NID_subject_alt_name, names);
  }
  check(X509_sign(raw, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0, "X509_sign");
  return certificate;
}

template <typename Write>
std::string to_pem(Write write) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  check(bio != nullptr && write(bio.get()) == 1, "PEM_write");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

struct TestCertificates {
  std::string ca_pem;
  std::string server_certificate_pem;
  std::string server_key_pem;
};

TestCertificates make_certificates(const std::string& host) {
  Key ca_key = make_key();
  Certificate ca = make_certificate(ca_key.get(), "deskd test CA", nullptr, nullptr, "", 1);
  Key server_key = make_key();
  Certificate server = make_certificate(server_key.get(), host, ca.get(), ca_key.get(), host, 2);
  TestCertificates certificates;
  certificates.ca_pem = to_pem([&](BIO* bio) { return PEM_write_bio_X509(bio, ca.get()); });
  certificates.server_certificate_pem = to_pem([&](BIO* bio) { return PEM_write_bio_X509(bio, server.get()); });
  certificates.server_key_pem = to_pem([&](BIO* bio) {
    return PEM_write_bio_PrivateKey(bio, server_key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  return certificates;
}

std::filesystem::path make_temporary_folder() {
  std::string pattern = "/var/tmp/deskd-fake-http-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp under /var/tmp failed");
  return pattern;
}

// ---- Writing scripted responses ---------------------------------------------------------------

std::string reason_for(unsigned status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 529: return "Overloaded";
    default: return "Status";
  }
}

std::string head_for(const FakeResponse& response) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + reason_for(response.status) + "\r\n";
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  std::size_t total = 0;
  for (const auto& piece : response.pieces) total += piece.data.size();
  switch (response.framing) {
    case FakeResponse::Framing::content_length:
      // Closing mid-body must leave the body visibly short.
      if (response.close_mid_body) total += 100;
      head += "Content-Length: " + std::to_string(total) + "\r\n";
      break;
    case FakeResponse::Framing::chunked: head += "Transfer-Encoding: chunked\r\n"; break;
    case FakeResponse::Framing::until_close: break;
  }
  bool closes = !response.keep_alive || response.framing == FakeResponse::Framing::until_close;
  head += closes ? "Connection: close\r\n" : "";
  head += "\r\n";
  return head;
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

// The completion handler of the fakes' coroutines: an escaped exception is a bug in the
// fake, worth a line in the test's output.
void report_escape(std::exception_ptr escaped) {
  if (!escaped) return;
  try {
    std::rethrow_exception(escaped);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fake http server: %s\n", error.what());
  }
}

// Closes the lowest layer of a plain or TLS stream.
void close_stream(tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}
void close_stream(asio::ssl::stream<tcp::socket>& stream) { close_stream(stream.next_layer()); }

}  // namespace

FakeResponse FakeResponse::json(unsigned status, std::string body) {
  FakeResponse response;
  response.status = status;
  response.headers = {{"Content-Type", "application/json"}};
  response.pieces = {BodyPiece{std::move(body)}};
  return response;
}

FakeResponse FakeResponse::event_stream(std::vector<BodyPiece> pieces) {
  FakeResponse response;
  response.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  response.pieces = std::move(pieces);
  response.framing = Framing::chunked;
  return response;
}

std::optional<std::string> RecordedRequest::header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (beast::iequals(field, name)) return value;
  }
  return std::nullopt;
}

// ---- The server ----------------------------------------------------------------------------------

struct FakeHttpServer::Impl {
  explicit Impl(FakeServerOptions options_) : options(std::move(options_)), acceptor(io) {}

  FakeServerOptions options;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::uint16_t port = 0;
  std::optional<asio::ssl::context> tls;
  std::filesystem::path folder;
  std::filesystem::path ca_file;
  std::thread thread;

  mutable std::mutex mutex;
  std::deque<FakeResponse> queue;
  std::function<FakeResponse(const RecordedRequest&)> fallback;
  std::vector<RecordedRequest> requests;
  std::atomic<std::size_t> connections{0};

  FakeResponse answer(RecordedRequest request) {
    std::lock_guard lock(mutex);
    requests.push_back(request);
    if (!queue.empty()) {
      FakeResponse response = std::move(queue.front());
      queue.pop_front();
      return response;
    }
    if (fallback) return fallback(request);
    return FakeResponse::json(500, R"({"error":"the fake server had no response scripted"})");
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [error, socket] = co_await acceptor.async_accept(kAwait);
      if (error) co_return;
      ++connections;
      // Pieces go out as written, not held back by Nagle waiting on a delayed ACK.
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (tls) {
        auto stream = std::make_unique<asio::ssl::stream<tcp::socket>>(std::move(socket), *tls);
        asio::co_spawn(io, serve_tls(std::move(stream)), report_escape);
      } else {
        auto plain = std::make_unique<tcp::socket>(std::move(socket));
        asio::co_spawn(io, serve(std::move(plain)), report_escape);
      }
    }
  }

  asio::awaitable<void> serve_tls(std::unique_ptr<asio::ssl::stream<tcp::socket>> stream) {
    auto [error] = co_await stream->async_handshake(asio::ssl::stream_base::server, kAwait);
    if (error) co_return;  // the client refused the certificate: nothing to answer
    co_await serve(std::move(stream));
  }

  template <typename Stream>
  asio::awaitable<void> serve(std::unique_ptr<Stream> stream) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{64} << 20);
      auto [read_error, bytes] = co_await http::async_read(*stream, buffer, parser, kAwait);
      if (read_error) co_return;
      const auto& message = parser.get();
      RecordedRequest request;
      request.method = std::string(message.method_string());
      request.target = std::string(message.target());
      for (const auto& field : message) {
        request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      request.body = message.body();
      FakeResponse response = answer(std::move(request));
      bool keep_going = co_await respond(*stream, response);
      if (!keep_going) {
        close_stream(*stream);
        co_return;
      }
    }
  }

  // Sends `response` as scripted; whether the connection may serve another request.
  template <typename Stream>
  asio::awaitable<bool> respond(Stream& stream, const FakeResponse& response) {
    if (response.raw_bytes) {
      co_await asio::async_write(stream, asio::buffer(*response.raw_bytes), kAwait);
      co_return false;
    }
    std::string head = head_for(response);
    auto [head_error, head_bytes] = co_await asio::async_write(stream, asio::buffer(head), kAwait);
    if (head_error) co_return false;
    asio::steady_timer timer(io);
    for (const auto& piece : response.pieces) {
      if (piece.delay.count() > 0) {
        timer.expires_after(piece.delay);
        co_await timer.async_wait(kAwait);
      }
      if (piece.data.empty()) continue;
      std::string bytes =
          response.framing == FakeResponse::Framing::chunked ? chunk(piece.data) : piece.data;
      auto [error, written] = co_await asio::async_write(stream, asio::buffer(bytes), kAwait);
      if (error) co_return false;
    }
    if (response.stall) {
      timer.expires_at(asio::steady_timer::time_point::max());
      co_await timer.async_wait(kAwait);
      co_return false;
    }
    if (response.close_mid_body) co_return false;
    if (response.framing == FakeResponse::Framing::chunked) {
      std::string last = "0\r\n\r\n";
      auto [error, written] = co_await asio::async_write(stream, asio::buffer(last), kAwait);
      if (error) co_return false;
    }
    co_return response.keep_alive && !response.close_silently &&
        response.framing != FakeResponse::Framing::until_close;
  }
};

FakeHttpServer::FakeHttpServer(FakeServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  if (impl_->options.tls) {
    TestCertificates certificates = make_certificates(impl_->options.certificate_host);
    impl_->folder = make_temporary_folder();
    impl_->ca_file = impl_->folder / "ca.pem";
    std::ofstream(impl_->ca_file) << certificates.ca_pem;
    impl_->tls.emplace(asio::ssl::context::tls_server);
    impl_->tls->use_certificate_chain(asio::buffer(certificates.server_certificate_pem));
    impl_->tls->use_private_key(asio::buffer(certificates.server_key_pem), asio::ssl::context::pem);
  }
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  impl_->port = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->accept_loop(), report_escape);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

FakeHttpServer::~FakeHttpServer() {
  impl_->io.stop();
  impl_->thread.join();
  if (!impl_->folder.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(impl_->folder, ignored);
  }
}

void FakeHttpServer::enqueue(FakeResponse response) {
  std::lock_guard lock(impl_->mutex);
  impl_->queue.push_back(std::move(response));
}

void FakeHttpServer::set_fallback(std::function<FakeResponse(const RecordedRequest&)> responder) {
  std::lock_guard lock(impl_->mutex);
  impl_->fallback = std::move(responder);
}

std::uint16_t FakeHttpServer::port() const { return impl_->port; }

std::string FakeHttpServer::url(std::string_view target) const {
  std::string base = impl_->options.tls ? "https://localhost:" : "http://127.0.0.1:";
  return base + std::to_string(port()) + std::string(target);
}

std::filesystem::path FakeHttpServer::ca_file() const { return impl_->ca_file; }

std::vector<RecordedRequest> FakeHttpServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->requests;
}

std::size_t FakeHttpServer::connections_accepted() const { return impl_->connections.load(); }

// ---- The CONNECT proxy -----------------------------------------------------------------------

struct FakeConnectProxy::Impl {
  explicit Impl(unsigned status_) : status(status_), acceptor(io) {}

  unsigned status;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::uint16_t port = 0;
  std::thread thread;
  mutable std::mutex mutex;
  std::vector<std::string> heads;
  std::map<std::string, std::uint16_t> routes;

  struct Tunnel {
    explicit Tunnel(tcp::socket client_) : client(std::move(client_)), server(client.get_executor()) {}
    tcp::socket client;
    tcp::socket server;
  };

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [error, socket] = co_await acceptor.async_accept(kAwait);
      if (error) co_return;
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      asio::co_spawn(io, serve(std::make_shared<Tunnel>(std::move(socket))), report_escape);
    }
  }

  asio::awaitable<void> serve(std::shared_ptr<Tunnel> tunnel) {
    std::string received;
    auto [read_error, head_bytes] =
        co_await asio::async_read_until(tunnel->client, asio::dynamic_buffer(received), "\r\n\r\n", kAwait);
    if (read_error) co_return;
    std::string head = received.substr(0, head_bytes);
    std::string early = received.substr(head_bytes);
    {
      std::lock_guard lock(mutex);
      heads.push_back(head);
    }
    if (status != 200 || !head.starts_with("CONNECT ")) {
      std::string refusal = "HTTP/1.1 " + std::to_string(status) + " Refused\r\nContent-Length: 0\r\n\r\n";
      co_await asio::async_write(tunnel->client, asio::buffer(refusal), kAwait);
      close_stream(tunnel->client);
      co_return;
    }
    std::string authority = head.substr(8, head.find(' ', 8) - 8);
    auto colon = authority.rfind(':');
    std::string host = authority.substr(0, colon);
    if (host.starts_with('[')) host = host.substr(1, host.size() - 2);
    std::string service = authority.substr(colon + 1);
    {
      std::lock_guard lock(mutex);
      if (auto found = routes.find(host); found != routes.end()) {
        host = "127.0.0.1";
        service = std::to_string(found->second);
      }
    }
    tcp::resolver resolver(io);
    auto [resolve_error, endpoints] = co_await resolver.async_resolve(host, service, kAwait);
    bool connected = false;
    if (!resolve_error) {
      for (const auto& entry : endpoints) {
        boost::system::error_code ignored;
        tunnel->server.close(ignored);
        auto [connect_error] = co_await tunnel->server.async_connect(entry.endpoint(), kAwait);
        if (!connect_error) {
          tunnel->server.set_option(tcp::no_delay(true), ignored);
          connected = true;
          break;
        }
      }
    }
    std::string answer = connected ? "HTTP/1.1 200 Connection established\r\n\r\n"
                                   : "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n";
    auto [answer_error, answer_bytes] = co_await asio::async_write(tunnel->client, asio::buffer(answer), kAwait);
    if (answer_error || !connected) {
      close_stream(tunnel->client);
      co_return;
    }
    if (!early.empty()) co_await asio::async_write(tunnel->server, asio::buffer(early), kAwait);
    asio::co_spawn(io, pump(tunnel, true), report_escape);
    co_await pump(tunnel, false);
  }

  // Copies one direction until it ends, then passes the end on.
  static asio::awaitable<void> pump(std::shared_ptr<Tunnel> tunnel, bool to_server) {
    tcp::socket& from = to_server ? tunnel->client : tunnel->server;
    tcp::socket& to = to_server ? tunnel->server : tunnel->client;
    std::string piece(16 * 1024, '\0');
    for (;;) {
      auto [read_error, bytes] = co_await from.async_read_some(asio::buffer(piece.data(), piece.size()), kAwait);
      if (read_error) break;
      auto [write_error, written] = co_await asio::async_write(to, asio::buffer(piece.data(), bytes), kAwait);
      if (write_error) break;
    }
    boost::system::error_code ignored;
    to.shutdown(tcp::socket::shutdown_send, ignored);
  }
};

FakeConnectProxy::FakeConnectProxy(unsigned status) : impl_(std::make_unique<Impl>(status)) {
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  impl_->port = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->accept_loop(), report_escape);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

FakeConnectProxy::~FakeConnectProxy() {
  impl_->io.stop();
  impl_->thread.join();
}

std::uint16_t FakeConnectProxy::port() const { return impl_->port; }

std::string FakeConnectProxy::url() const { return "http://127.0.0.1:" + std::to_string(port()); }

void FakeConnectProxy::route(std::string host, std::uint16_t port) {
  std::lock_guard lock(impl_->mutex);
  impl_->routes[std::move(host)] = port;
}

std::vector<std::string> FakeConnectProxy::connect_requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->heads;
}

}  // namespace deskd::model::testing
