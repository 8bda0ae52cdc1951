#pragma once
// The egress tests' small internet (tests/e2e/small_internet/): the test process moves into
// network and mount namespaces of its own, where deskd then runs, and up.sh joins it by a
// veth pair to one more namespace holding a DNS server and HTTP/HTTPS servers under several
// names. /etc/resolv.conf is replaced (in the test's mount namespace only) so that deskd's
// resolver asks the test's DNS server. All traffic stays inside these namespaces: no packet
// of these tests goes to a public address or a private address outside them.

#include <string>

namespace deskd::e2e {

/// 10.201.0.0/24 stands for the public internet (the desks' configs name it explicitly);
/// 10.202.0.0/24 for a private network that must never be reached.
inline constexpr const char* kAllowedSubnet = "10.201.0.0/24";

class SmallInternet {
 public:
  /// Moves this process into its own namespaces (once per process) and builds the internet;
  /// ok() says whether it worked and why() why not.
  SmallInternet();
  ~SmallInternet();  ///< takes it down
  SmallInternet(const SmallInternet&) = delete;
  SmallInternet& operator=(const SmallInternet&) = delete;

  /// Whether the test must be skipped: only when not root.
  bool needs_root() const { return needs_root_; }
  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  /// The test CA's certificate, which the desks are told to trust.
  std::string ca_file() const { return folder_ + "/ca.pem"; }
  /// Every connection any canary (a server on a refused address) accepted, one a line.
  std::string canary_log() const;

 private:
  std::string name_;
  std::string folder_;
  std::string why_;
  bool needs_root_ = false;
};

}  // namespace deskd::e2e
