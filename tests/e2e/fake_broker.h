#pragma once
// The API gate tests' broker: tests/e2e/fake_broker.py (a Kite Connect v3 look-alike) as a
// child of the test, serving HTTPS for "broker.test" on a loopback port with a certificate
// from a CA of its own (made here with the openssl CLI, as any private CA is made), and
// plain HTTP on a second port. It logs every request it receives, on disk before it replies,
// and answers 403 TokenException unless the Authorization is exactly the expected one.

#include <sys/types.h>

#include <boost/json/object.hpp>

#include <string>
#include <vector>

namespace deskd::e2e {

class FakeBroker {
 public:
  /// Makes the certificates and starts the broker expecting `authorization`; ok() and why()
  /// say whether it worked.
  explicit FakeBroker(std::string authorization);
  ~FakeBroker();  ///< stops it and removes its folder
  FakeBroker(const FakeBroker&) = delete;
  FakeBroker& operator=(const FakeBroker&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  /// The HTTPS port (broker.test) and the plain HTTP one, both on 127.0.0.1.
  int port() const { return port_; }
  int http_port() const { return http_port_; }
  /// "https://broker.test:PORT"
  std::string origin() const { return "https://broker.test:" + std::to_string(port_); }
  /// The broker's CA certificate: the [[api]]'s ca_file (world-readable).
  std::string ca_file() const { return folder_ + "/ca.pem"; }
  std::string log_path() const { return folder_ + "/requests.jsonl"; }
  /// Every request received so far: {"method", "path", "headers", "body"}.
  std::vector<boost::json::object> requests() const;
  /// The requests whose path starts with `prefix`.
  std::vector<boost::json::object> requests_to(const std::string& prefix) const;
  /// Stops it (SIGTERM, then SIGKILL): an upstream that is down.
  void stop();

 private:
  std::string authorization_;
  std::string folder_;
  std::string why_;
  pid_t pid_ = -1;
  int port_ = 0;
  int http_port_ = 0;
};

/// One request's field as text ("" when absent): "method", "path", "body".
std::string request_field(const boost::json::object& request, const char* field);
/// A header of a logged request, its name in any case ("" when absent).
std::string request_header(const boost::json::object& request, const std::string& name);

}  // namespace deskd::e2e
