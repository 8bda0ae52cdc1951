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
#include <cstdlib>
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

bool is_inside_folder(const std::string& path, const std::string& folder) {
  return path.rfind(folder + "/", 0) == 0;
}

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

// host_view = "full" shows the whole host read-only, but not people's homes (issue 26): /home,
// /root and the home of deskd's own user are covered. The files are world-readable, so that
// only the cover can keep them from the sandbox, under either daemon.
class FullViewHomesTest : public SandboxTest {
 protected:
  // A folder of the daemon's user at `path`, holding `file` (world-readable) with `text`.
  std::unique_ptr<HostFolder> folder_with_file(const std::string& path, const std::string& file,
                                               const std::string& text) {
    auto folder = std::make_unique<HostFolder>(path, daemon_host_uid(daemon()));
    const fs::path full = fs::path(path) / file;
    fs::create_directories(full.parent_path());
    ::chmod(full.parent_path().c_str(), 0755);
    write_host_file(full, text, 0644);
    return folder;
  }
};

TEST_P(FullViewHomesTest, HomesOfPeopleAndOfTheDaemonsUserAreCovered) {
  if (!fs::is_directory("/home")) GTEST_SKIP() << "this host has no /home";
  const std::string name = unique_name("deskd-home");
  const std::string secret = unique_name("deskd-home-secret");
  const auto person = folder_with_file("/home/" + name, "notes.txt", secret + "\n");
  // The daemon's user's home, named to deskd as its $HOME (the unprivileged test uid has no
  // passwd entry): under an unprivileged deskd this is where its ~/.ssh lives.
  const auto daemon_home = folder_with_file("/var/tmp/" + name + "-daemon-home", ".ssh/id_ed25519", secret + "\n");
  // The control: a folder beside it that the full view does show.
  const auto shown = folder_with_file("/var/tmp/" + name + "-shown", "shown.txt", "shown-control\n");
  LaunchOptions options;
  options.environment.push_back("HOME=" + daemon_home->path());

  const std::vector<std::string> hidden_files = {person->path() + "/notes.txt",
                                                 daemon_home->path() + "/.ssh/id_ed25519"};
  std::string script;
  for (const auto& file : hidden_files) script += "echo \"" + file + ": $(" + probe("probe_open") + " " + file + ")\"\n";
  script += "echo \"root: [$(ls -A /root 2>&1)]\"\n";
  script += "echo \"home: [$(ls -A /home 2>&1)]\"\n";
  script += "cat " + shown->path() + "/shown.txt\n";
  const SandboxRun run = sandbox({"/bin/bash", "-c", script}, {"--host-view", "full"}, options);
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  for (const auto& file : hidden_files) {
    EXPECT_THAT(run.out, ::testing::HasSubstr(file + ": errno ")) << run.describe();
  }
  EXPECT_THAT(run.out, ::testing::HasSubstr("root: []\n")) << run.describe();
  EXPECT_THAT(run.out, ::testing::HasSubstr("home: []\n")) << run.describe();
  EXPECT_THAT(run.out, ::testing::HasSubstr("shown-control\n")) << run.describe();
  EXPECT_THAT(run.out, ::testing::Not(::testing::HasSubstr(secret)));
}

TEST_P(FullViewHomesTest, ADeskInsideACoveredHomeAndItsReadOnlyPathsStayVisible) {
  if (!fs::is_directory("/home")) GTEST_SKIP() << "this host has no /home";
  const std::string name = unique_name("deskd-home");
  const std::string secret = unique_name("deskd-home-secret");
  const auto home = folder_with_file("/home/" + name, "shared/data.txt", "shared-data\n");
  write_host_file(home->path() + "/sibling.txt", secret + "\n", 0644);
  // The desk itself lives in the home, as a user may put it.
  const char* previous = std::getenv("DESKD_SECURITY_TMPDIR");
  const std::string saved = previous != nullptr ? previous : "";
  ::setenv("DESKD_SECURITY_TMPDIR", home->path().c_str(), 1);
  TestDesk inside(daemon());
  if (previous != nullptr) ::setenv("DESKD_SECURITY_TMPDIR", saved.c_str(), 1);
  else ::unsetenv("DESKD_SECURITY_TMPDIR");
  ASSERT_TRUE(is_inside_folder(inside.directory(), home->path())) << inside.directory();

  const std::string script = "cat " + inside.path("README.md") + "\n" +
                             "echo written > " + inside.path("notes/from-sandbox.md") + " && echo wrote\n" +
                             "cat " + home->path() + "/shared/data.txt\n" +
                             "echo \"sibling: $(" + probe("probe_open") + " " + home->path() + "/sibling.txt)\"\n" +
                             "echo \"secret: $(" + probe("probe_open") + " " + inside.path(".env") + ")\"\n";
  const SandboxRun run = run_in_sandbox(daemon(), inside, {"/bin/bash", "-c", script},
                                        {"--host-view", "full", "--read-only", home->path() + "/shared"});
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  EXPECT_THAT(run.out, ::testing::HasSubstr("This desk is for tests.\n")) << run.describe();
  EXPECT_THAT(run.out, ::testing::HasSubstr("wrote\n")) << run.describe();
  EXPECT_EQ(read_host_file(inside.path("notes/from-sandbox.md")), "written\n");
  EXPECT_THAT(run.out, ::testing::HasSubstr("shared-data\n")) << run.describe();
  EXPECT_THAT(run.out, ::testing::HasSubstr("sibling: errno ")) << run.describe();
  EXPECT_THAT(run.out, ::testing::HasSubstr("secret: errno ")) << run.describe();
  EXPECT_THAT(run.out, ::testing::Not(::testing::HasSubstr(secret)));
  EXPECT_THAT(run.out, ::testing::Not(::testing::HasSubstr(inside.secret())));
}

DESKD_FOR_BOTH_DAEMONS(FullViewHomesTest);

}  // namespace
}  // namespace deskd::security_testing
