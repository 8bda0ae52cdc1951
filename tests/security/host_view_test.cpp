// One world per desk (issue 11): the host's own places are out of a desk's sight. Listening
// Unix sockets of the daemon's user in /var/tmp, in a home-like folder and under /etc, and
// files only that user may read (mode 0600) outside the desk, are all unreachable from the
// sandbox. The sockets are owned by the daemon's user and world-connectable, so that only the
// sandbox can be what refuses; under the unprivileged daemon the sandbox's host uid is that
// user's, so file permissions cannot refuse the private files either. Today the sandbox shows
// the whole host read-only, and a read-only mount neither refuses connect() nor read().

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

namespace fs = std::filesystem;

// A listening socket file, the daemon's user's, that any uid may connect to.
class UnixListener {
 public:
  UnixListener(const std::string& path, uid_t owner) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    EXPECT_LT(path.size(), sizeof address.sun_path) << path;
    std::memcpy(address.sun_path, path.data(), std::min(path.size(), sizeof address.sun_path - 1));
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0)
        << path << ": " << std::strerror(errno);
    EXPECT_EQ(::listen(fd_, 8), 0) << std::strerror(errno);
    EXPECT_EQ(::chown(path.c_str(), owner, owner), 0) << path;
    ::chmod(path.c_str(), 0777);
  }
  ~UnixListener() {
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
  }
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;
  const std::string& path() const { return path_; }
  bool was_reached() const {
    const int accepted = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (accepted < 0) return false;
    ::close(accepted);
    return true;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

class HostViewTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    const uid_t owner = daemon_host_uid(daemon());
    const std::string name = unique_name("deskd-host-view");
    folders_.push_back(std::make_unique<HostFolder>("/var/tmp/" + name, owner));
    // A home-like folder: /home when the host has one; else root's home for the root
    // daemon, and a folder of the user's own under /var/lib for the unprivileged one.
    std::string home = "/home/" + name;
    if (!fs::is_directory("/home")) home = daemon() == Daemon::root ? "/root/" + name : "/var/lib/" + name;
    folders_.push_back(std::make_unique<HostFolder>(home, owner));
    folders_.push_back(std::make_unique<HostFolder>("/etc/" + name, owner));
  }
  void TearDown() override {
    folders_.clear();
    SandboxTest::TearDown();
  }

  std::vector<std::unique_ptr<HostFolder>> folders_;
};

TEST_P(HostViewTest, HostUnixSocketsOfTheDaemonsUserAreUnreachable) {
  std::vector<std::unique_ptr<UnixListener>> listeners;
  std::string script;
  for (const auto& folder : folders_) {
    listeners.push_back(std::make_unique<UnixListener>(folder->path() + "/s", daemon_host_uid(daemon())));
    const std::string& path = listeners.back()->path();
    script += "echo \"" + path + ": $(" + probe("probe_connect") + " unix " + path + ")\"\n";
  }
  const SandboxRun run = sandbox({"/bin/bash", "-c", script});
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  for (const auto& listener : listeners) {
    EXPECT_THAT(run.out, ::testing::HasSubstr(listener->path() + ": errno "))
        << "the host's Unix socket " << listener->path() << " is reachable from the sandbox\n"
        << run.describe();
    EXPECT_FALSE(listener->was_reached()) << "a connection from the sandbox reached " << listener->path();
  }
}

TEST_P(HostViewTest, PrivateFilesOfTheDaemonsUserOutsideTheDeskCannotBeRead) {
  // Under the root daemon the sandbox's uid is not the owner, so permissions refuse as well;
  // under the unprivileged daemon only the host view can.
  const std::string secret = unique_name("deskd-private");
  std::vector<std::string> files;
  for (const auto& folder : folders_) {
    if (folder->path().rfind("/etc/", 0) == 0) continue;  // /etc is part of the minimal view
    files.push_back(folder->path() + "/private");
    write_host_file(files.back(), secret + "\n", 0600);
    ASSERT_EQ(::chown(files.back().c_str(), daemon_host_uid(daemon()), daemon_host_uid(daemon())), 0);
  }
  for (const auto& file : files) {
    const SandboxRun run = sandbox({probe("probe_open"), file});
    ASSERT_EQ(run.exit_status, 0) << run.describe();
    EXPECT_THAT(first_line(run.out), ::testing::StartsWith("errno "))
        << "the daemon's user's private file " << file << " is readable from the sandbox\n"
        << run.describe();
    EXPECT_THAT(run.out, ::testing::Not(::testing::HasSubstr(secret)));
  }
}

DESKD_FOR_BOTH_DAEMONS(HostViewTest);

}  // namespace
}  // namespace deskd::security_testing
