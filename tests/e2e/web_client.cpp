#include "e2e/web_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace deskd::e2e {

namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(), [](unsigned char c) { return std::tolower(c); });
  return result;
}

int connect_tcp(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string HttpReply::header(std::string_view name) const {
  const std::string wanted = lower(name) + ":";
  std::size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const std::size_t end = head.find("\r\n", at + 2);
    const std::string line = head.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
    if (lower(line).starts_with(wanted)) {
      std::string value = line.substr(wanted.size());
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      return value;
    }
    at = end;
  }
  return "";
}

std::string http_request(std::string_view method, std::string_view target,
                         const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body,
                         std::string_view host) {
  std::string text =
      std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: " + std::string(host) + "\r\n";
  for (const auto& [name, value] : headers) text += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST") text += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  text += "\r\n";
  text += body;
  return text;
}

WebClient WebClient::unix_socket(const std::string& path) {
  WebClient client;
  client.fd_ = connect_unix(path);
  return client;
}

WebClient WebClient::tcp(int port) {
  WebClient client;
  client.fd_ = connect_tcp(port);
  return client;
}

WebClient WebClient::tls(int port) {
  WebClient client;
  client.fd_ = connect_tcp(port);
  if (client.fd_ < 0) return client;
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  SSL* tls = SSL_new(context);
  SSL_set_fd(tls, client.fd_);
  SSL_set_tlsext_host_name(tls, "localhost");
  client.tls_context_ = context;
  client.tls_ = tls;
  if (SSL_connect(tls) != 1) {
    ::close(client.fd_);
    client.fd_ = -1;
  }
  return client;
}

WebClient::~WebClient() {
  if (tls_ != nullptr) SSL_free(static_cast<SSL*>(tls_));
  if (tls_context_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(tls_context_));
  if (fd_ >= 0) ::close(fd_);
}

WebClient::WebClient(WebClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      tls_context_(std::exchange(other.tls_context_, nullptr)),
      tls_(std::exchange(other.tls_, nullptr)),
      received_(std::move(other.received_)),
      ended_(other.ended_) {}

bool WebClient::send(std::string_view bytes) {
  if (fd_ < 0) return false;
  while (!bytes.empty()) {
    const long written = tls_ != nullptr
                             ? SSL_write(static_cast<SSL*>(tls_), bytes.data(), static_cast<int>(bytes.size()))
                             : ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (written <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

bool WebClient::receive_more(std::chrono::milliseconds timeout) {
  if (fd_ < 0 || ended_) return false;
  if (tls_ == nullptr || SSL_pending(static_cast<SSL*>(tls_)) == 0) {
    pollfd waiting{fd_, POLLIN, 0};
    if (::poll(&waiting, 1, static_cast<int>(timeout.count())) <= 0) return false;
  }
  char chunk[16384];
  const long count =
      tls_ != nullptr ? SSL_read(static_cast<SSL*>(tls_), chunk, sizeof chunk) : ::recv(fd_, chunk, sizeof chunk, 0);
  if (count <= 0) {
    ended_ = true;
    return false;
  }
  received_.append(chunk, static_cast<std::size_t>(count));
  return true;
}

std::optional<HttpReply> WebClient::read_reply(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto left = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };
  std::size_t end;
  while ((end = received_.find("\r\n\r\n")) == std::string::npos) {
    if (!receive_more(left())) return std::nullopt;
  }
  HttpReply reply;
  reply.head = received_.substr(0, end);
  std::sscanf(reply.head.c_str(), "HTTP/1.1 %d", &reply.status);
  const std::string length = reply.header("Content-Length");
  const std::size_t size = length.empty() ? 0 : std::stoul(length);
  while (received_.size() < end + 4 + size) {
    if (!receive_more(left())) return std::nullopt;
  }
  reply.body = received_.substr(end + 4, size);
  received_.erase(0, end + 4 + size);
  return reply;
}

std::optional<HttpReply> WebClient::exchange(std::string_view request, std::chrono::milliseconds timeout) {
  if (!send(request)) return std::nullopt;
  return read_reply(timeout);
}

std::string WebClient::read_until(std::string_view marker, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (received_.find(marker) == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !receive_more(left)) break;
  }
  return received_;
}

bool WebClient::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ended_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!receive_more(left) && !ended_) return false;
  }
  return true;
}

std::string http_as_other_user(const std::string& path, uid_t uid, const std::string& request) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return "cannot make a pipe";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  const pid_t child = ::fork();
  if (child == 0) {
    // Only syscalls from here: the child of a test process reports through the pipe.
    const auto say = [&](const char* text, std::size_t size) { (void)!::write(report[1], text, size); };
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) {
      say("cannot change uid", 17);
      ::_exit(1);
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      say("cannot connect", 14);
      ::_exit(1);
    }
    (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buffer[4096];
    std::size_t size = 0;
    pollfd waiting{fd, POLLIN, 0};
    while (size<sizeof buffer&& ::poll(&waiting, 1, 10000)> 0) {
      const ssize_t count = ::recv(fd, buffer + size, sizeof buffer - size, 0);
      if (count <= 0) break;
      size += static_cast<std::size_t>(count);
    }
    say(buffer, size);
    ::_exit(0);
  }
  ::close(report[1]);
  std::string text;
  char chunk[4096];
  pollfd waiting{report[0], POLLIN, 0};
  while (::poll(&waiting, 1, 30000) > 0) {
    const ssize_t count = ::read(report[0], chunk, sizeof chunk);
    if (count <= 0) break;
    text.append(chunk, static_cast<std::size_t>(count));
  }
  ::close(report[0]);
  ::waitpid(child, nullptr, 0);
  return text;
}

bool write_test_certificate(const std::string& certificate_file, const std::string& key_file) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* certificate = X509_new();
  if (key == nullptr || certificate == nullptr) return false;
  X509_set_version(certificate, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1);
  X509_gmtime_adj(X509_getm_notBefore(certificate), -60);
  X509_gmtime_adj(X509_getm_notAfter(certificate), 3600);
  X509_set_pubkey(certificate, key);
  X509_NAME* name = X509_get_subject_name(certificate);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(certificate, name);
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, certificate, certificate, nullptr, nullptr, 0);
  if (X509_EXTENSION* names =
          X509V3_EXT_conf_nid(nullptr, &context, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1")) {
    X509_add_ext(certificate, names, -1);
    X509_EXTENSION_free(names);
  }
  bool written = X509_sign(certificate, key, EVP_sha256()) > 0;
  if (FILE* file = std::fopen(certificate_file.c_str(), "w")) {
    written = written && PEM_write_X509(file, certificate) == 1;
    std::fclose(file);
  } else {
    written = false;
  }
  if (FILE* file = std::fopen(key_file.c_str(), "w")) {
    written = written && PEM_write_PrivateKey(file, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::fclose(file);
  } else {
    written = false;
  }
  X509_free(certificate);
  EVP_PKEY_free(key);
  return written;
}

}  // namespace deskd::e2e
