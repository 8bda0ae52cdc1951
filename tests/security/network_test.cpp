// With --net none (the default) the sandbox has only a loopback of its own: a host listener
// on 127.0.0.1, a host Unix socket under /run or $XDG_RUNTIME_DIR, and an abstract socket
// (kept per network namespace) are all out of reach. The host listeners are world-connectable
// so that only the sandbox can be what stops the probe.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::StartsWith;

// A listening socket owned by the test; closed (and its file removed) at the end.
class HostListener {
 public:
  static HostListener tcp_loopback() {
    HostListener listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    EXPECT_EQ(::bind(listener.fd_, reinterpret_cast<sockaddr*>(&address), size), 0);
    EXPECT_EQ(::getsockname(listener.fd_, reinterpret_cast<sockaddr*>(&address), &size), 0);
    listener.port_ = ntohs(address.sin_port);
    listener.listen();
    return listener;
  }

  // abstract: a name in the network namespace's own table rather than a file.
  static HostListener unix_socket(const std::string& name, bool abstract) {
    HostListener listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path + (abstract ? 1 : 0), name.data(), name.size());
    const auto size =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (abstract ? 1 : 0));
    EXPECT_EQ(::bind(listener.fd_, reinterpret_cast<sockaddr*>(&address), size), 0) << name;
    if (!abstract) {
      listener.path_ = name;
      ::chmod(name.c_str(), 0777);  // any uid may connect: only the sandbox may refuse
    }
    listener.listen();
    return listener;
  }

  HostListener(HostListener&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), port_(other.port_), path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ~HostListener() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  int port() const { return port_; }

  // Whether a connection from anywhere arrived (the listener is non-blocking).
  bool was_reached() const {
    const int accepted = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (accepted < 0) return false;
    ::close(accepted);
    return true;
  }

 private:
  explicit HostListener(int fd) : fd_(fd) { EXPECT_GE(fd_, 0) << std::strerror(errno); }
  void listen() { EXPECT_EQ(::listen(fd_, 8), 0) << std::strerror(errno); }

  int fd_;
  int port_ = 0;
  std::string path_;
};

class NetworkTest : public SandboxTest {};

TEST_P(NetworkTest, OnlyLoopbackExistsAndItIsUp) {
  const SandboxRun run = sandbox({probe("probe_connect"), "interfaces"});
  EXPECT_EQ(run.out, "lo up\n") << run.describe();
}

TEST_P(NetworkTest, SysNamesOnlyTheSandboxesInterfaces) {
  // The host's /sys would list its interfaces and their hardware addresses.
  const SandboxRun run = sandbox({"/bin/ls", "/sys/class/net"});
  EXPECT_EQ(run.out, "lo\n") << run.describe();
}

TEST_P(NetworkTest, HostTcpListenerOnLoopbackIsUnreachable) {
  HostListener listener = HostListener::tcp_loopback();
  const SandboxRun run = sandbox(
      {probe("probe_connect"), "tcp", "127.0.0.1", std::to_string(listener.port())});
  EXPECT_THAT(first_line(run.out), StartsWith("errno ")) << run.describe();
  EXPECT_FALSE(listener.was_reached());
}

TEST_P(NetworkTest, HostTcpListenerIsReachableWithNetHost) {
  // The control for the test above: the same probe does connect when asked to share.
  HostListener listener = HostListener::tcp_loopback();
  const SandboxRun run =
      sandbox({probe("probe_connect"), "tcp", "127.0.0.1", std::to_string(listener.port())},
              {"--net", "host"});
  EXPECT_EQ(run.out, "ok\n") << run.describe();
  EXPECT_TRUE(listener.was_reached());
}

TEST_P(NetworkTest, HostUnixSocketUnderRunIsUnreachable) {
  const std::string path = "/run/" + unique_name("deskd-test") + ".sock";
  HostListener listener = HostListener::unix_socket(path, false);
  for (const std::string& spelling : {path, "/var" + path}) {
    const SandboxRun run = sandbox({probe("probe_connect"), "unix", spelling});
    EXPECT_THAT(first_line(run.out), StartsWith("errno ")) << spelling << "\n" << run.describe();
  }
  EXPECT_FALSE(listener.was_reached());
}

TEST_P(NetworkTest, HostUnixSocketInXdgRuntimeDirIsUnreachable) {
  // A runtime folder outside /run (where the sandbox would cover it anyway), reachable by
  // every uid on the host, named to deskd the way a user session names it.
  std::string folder = "/var/tmp/deskd-xdg-XXXXXX";
  ASSERT_NE(::mkdtemp(folder.data()), nullptr);
  ::chmod(folder.c_str(), 0755);
  const std::string path = folder + "/bus";
  {
    HostListener listener = HostListener::unix_socket(path, false);
    LaunchOptions options;
    options.environment.push_back("XDG_RUNTIME_DIR=" + folder);
    const SandboxRun run = sandbox({probe("probe_connect"), "unix", path}, {}, options);
    EXPECT_THAT(first_line(run.out), StartsWith("errno ")) << run.describe();
    EXPECT_FALSE(listener.was_reached());
  }
  std::filesystem::remove_all(folder);
}

TEST_P(NetworkTest, HostAbstractUnixSocketIsUnreachable) {
  const std::string name = unique_name("deskd-test-abstract");
  HostListener listener = HostListener::unix_socket(name, true);
  // seccomp refuses socket(AF_UNIX) before the network namespace (which keeps abstract
  // names apart) or landlock's scoping are ever asked; both remain behind it.
  for (const char* network : {"none", "host"}) {
    const SandboxRun run = sandbox({probe("probe_connect"), "abstract", name}, {"--net", network});
    EXPECT_EQ(first_line(run.out), "errno EPERM") << run.describe();
  }
  EXPECT_FALSE(listener.was_reached());
}

// A host datagram socket, bound in a folder the test removes afterwards; anyone may send.
class HostDatagramSocket {
 public:
  explicit HostDatagramSocket(std::string path)
      : fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)), path_(std::move(path)) {
    EXPECT_GE(fd_, 0) << std::strerror(errno);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path_.data(), path_.size());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << path_;
    ::chmod(path_.c_str(), 0777);  // only the sandbox may refuse
  }
  ~HostDatagramSocket() {
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
  }
  HostDatagramSocket(const HostDatagramSocket&) = delete;
  HostDatagramSocket& operator=(const HostDatagramSocket&) = delete;

  // What arrived, all of it (the socket is non-blocking).
  std::string received() const {
    std::string all;
    char buffer[512];
    for (ssize_t got; (got = ::recv(fd_, buffer, sizeof buffer, 0)) > 0;) all.append(buffer, got);
    return all;
  }

 private:
  int fd_;
  std::string path_;
};

// socket(AF_UNIX) is refused; a datagram socketpair was the road around it: its socket can
// sendto() a pathname socket, or be connect()ed to one, that a mount shows.
TEST_P(NetworkTest, DatagramSocketpairReachesNoHostSocket) {
  std::string folder = "/var/tmp/deskd-dgram-XXXXXX";
  ASSERT_NE(::mkdtemp(folder.data()), nullptr);
  ::chmod(folder.c_str(), 0755);
  const std::string path = folder + "/host.sock";
  {
    HostDatagramSocket host(path);
    for (const char* view : {"minimal", "full"}) {
      const SandboxRun run = sandbox({probe("probe_connect"), "dgram-pair", path},
                                     {"--read-only", folder, "--host-view", view});
      EXPECT_EQ(run.out, "errno EPERM\n") << view << "\n" << run.describe();
    }
    EXPECT_EQ(host.received(), "");
    // The control: a stream pair, which is connected for life, still works.
    const SandboxRun control = sandbox({probe("probe_syscall"), "socketpair-unix"});
    EXPECT_EQ(control.out, "ok\n") << control.describe();
  }
  std::filesystem::remove_all(folder);
}

DESKD_FOR_BOTH_DAEMONS(NetworkTest);

}  // namespace
}  // namespace deskd::security_testing
