#pragma once
// A desk's own certificate authority, made when the desk starts, for the API gate's TLS:
// the desk's connection to a gated origin ends at deskd, which presents a certificate for
// that host minted here. The CA's key lives in deskd's memory only (never in a file, never
// in the desk's view); its certificate joins what the desk trusts (write_trust_bundle, mounted
// over the system bundle in the sandbox). The CA is name-constrained to the gated hosts, so
// it could vouch for nothing else even if it leaked.

#include <boost/asio/ssl/context.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace deskd::egress {

class DeskAuthority {
 public:
  /// A new CA for `desk_name`, valid from an hour ago for `hosts` only (names or addresses).
  static Result<std::shared_ptr<DeskAuthority>> create(const std::string& desk_name, std::vector<std::string> hosts);
  ~DeskAuthority();

  /// The CA's certificate, PEM.
  const std::string& certificate_pem() const;
  /// A TLS server context presenting a certificate for `host` (one of the hosts given),
  /// minted on first use and kept. Thread-safe.
  Result<std::shared_ptr<boost::asio::ssl::context>> server_context(const std::string& host);

 private:
  struct Keys;
  explicit DeskAuthority(std::unique_ptr<Keys> keys);
  std::unique_ptr<Keys> keys_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<boost::asio::ssl::context>> contexts_;
};

/// Where the system's trust bundle is on Debian; the sandbox mounts the desk's over it.
inline constexpr const char* kSystemTrustBundle = "/etc/ssl/certs/ca-certificates.crt";

/// Writes `file` (0644, replacing it atomically): the certificates of `system_bundle` (when
/// it exists) followed by `authority_pem`.
Result<void> write_trust_bundle(const std::filesystem::path& file, std::string_view authority_pem,
                                const std::filesystem::path& system_bundle = kSystemTrustBundle);

}  // namespace deskd::egress
