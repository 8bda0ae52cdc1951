// The launcher from a multithreaded process, as deskd is: between clone and exec the
// child must not use glibc calls that coordinate with other threads (setgroups and
// setres[ug]id do, and would wait forever for threads the child does not have). And the
// egress relay of network = "allowlist": it reaches the forwarder, never the command.

#include "sandbox/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "sandbox/cgroup_limits.h"
#include "tests/unit/sandbox/cgroup_line.h"
#include "tests/unit/sandbox/pipe_text.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;

TEST(LauncherTest, LaunchesFromAProcessWithOtherThreads) {
  char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();

  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  std::vector<std::thread> busy;
  for (int index = 0; index < 4; ++index) {
    busy.emplace_back([&] {
      std::unique_lock lock(mutex);
      done.wait(lock, [&] { return finished; });
    });
  }
  const auto started = std::chrono::steady_clock::now();
  for (int launch = 0; launch < 10; ++launch) {
    auto process = launch_sandboxed(spec, {"/bin/true"});
    ASSERT_TRUE(process.ok()) << process.error().what;
    auto status = process->wait();
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(*status, 0);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  {
    std::lock_guard lock(mutex);
    finished = true;
  }
  done.notify_all();
  for (auto& thread : busy) thread.join();
  fs::remove_all(root);
}

// A waiting launch clones with CLONE_VM and blocks every signal in the caller meanwhile
// (memory_sharing_clone.h): none of that mask may reach the command (deskd-init gives it an
// empty one), and the caller must have its own back afterwards.
TEST(LauncherTest, ALaunchSharingDeskdsMemoryLeavesTheCommandNoBlockedSignalAndTheCallerItsMask) {
  char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();
  // A cgroup of its own, as a desk's trial has: where the sandbox joins a desk's shared
  // cgroup, the launch forks instead (launcher.cpp, sharing_memory_is_safe).
  spec.desk_cgroup = std::make_shared<DeskCgroupSlot>(DeskCgroupSlot::Use::alone);
  sigset_t usr1, before;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &usr1, &before), 0);
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  auto process = launch_sandboxed(spec, {"/bin/sh", "-c", "grep SigBlk /proc/self/status"},
                                  StandardStreams{-1, fds[1], -1});
  ::close(fds[1]);
  ASSERT_TRUE(process.ok()) << process.error().what;
  std::string output;
  char buffer[256];
  for (ssize_t count; (count = ::read(fds[0], buffer, sizeof buffer)) > 0;) output.append(buffer, count);
  ::close(fds[0]);
  ASSERT_TRUE(process->wait().ok());
  sigset_t after;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &before, &after), 0);
  EXPECT_NE(output.find("SigBlk:\t0000000000000000"), std::string::npos) << output;
  EXPECT_EQ(sigismember(&after, SIGUSR1), 1);
  EXPECT_EQ(sigismember(&after, SIGTERM), 0);
  EXPECT_EQ(sigismember(&after, SIGCHLD), 0);
  fs::remove_all(root);
}

// Where a handler of the helper below ran: in the helper, or elsewhere (in a child that
// shares the helper's memory, whose getpid is 1 in its own pid namespace).
pid_t handler_owner = 0;
std::atomic<int> handler_runs_elsewhere{0};
void note_where_the_handler_ran(int) {
  if (static_cast<pid_t>(::syscall(SYS_getpid)) != handler_owner) handler_runs_elsewhere.fetch_add(1);
}

// A signal sent to the child while it runs in deskd's memory (systemd's SIGTERM to every
// process of the unit's cgroup at a stop; a terminal's SIGINT to deskd's process group,
// which the child is in until its setsid) waits, blocked, until the child restores the
// launching thread's mask just before executing deskd-init. deskd's handler must not run
// there: on deskd's memory, with the child's descriptors (asio's handler writes the signal's
// number to the descriptor number of its pipe, which in the child is the failure pipe or
// the command's). At its default instead, the signal is dropped: the child is its pid
// namespace's init, which the kernel gives no default-acting signal but SIGKILL and SIGSTOP.
TEST(LauncherTest, ASignalToTheChildSharingDeskdsMemoryNeverRunsDeskdsHandlerThere) {
  const fs::path root = [] {
    char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
    return fs::path(::mkdtemp(pattern));
  }();
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();
  spec.desk_cgroup = std::make_shared<DeskCgroupSlot>(DeskCgroupSlot::Use::alone);  // shares memory
  // In a helper process of its own process group, whose every member (the child too, until
  // its setsid) a thread keeps signalling.
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    handler_owner = ::getpid();
    if (::setpgid(0, 0) != 0) ::_exit(3);
    struct sigaction action {};
    action.sa_handler = note_where_the_handler_ran;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (::sigaction(SIGUSR2, &action, nullptr) != 0) ::_exit(3);
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    ::pthread_sigmask(SIG_UNBLOCK, &usr2, nullptr);
    std::atomic<bool> stop{false};
    std::thread sender([&] {
      while (!stop.load()) {
        ::kill(0, SIGUSR2);
        ::usleep(200);
      }
    });
    // Before CLONE_CLEAR_SIGHAND the handler ran in a child within the first few launches.
    for (int launch = 0; launch < 20 && handler_runs_elsewhere.load() == 0; ++launch) {
      auto process = launch_sandboxed(spec, {"/bin/true"});
      if (process.ok()) (void)process->wait();
    }
    stop = true;
    sender.join();
    ::_exit(handler_runs_elsewhere.load() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(helper, &status, 0), helper);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "deskd's handler ran in the child, on deskd's memory";
  fs::remove_all(root);
}

TEST(LauncherTest, ReportsAMissingCommandAndSetupFailures) {
  char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();
  auto missing = launch_sandboxed(spec, {"no-such-command-anywhere"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(exit_status_for_launch_error(missing.error()), kNotFoundStatus);
  spec.working_directory = root / "gone";
  auto broken = launch_sandboxed(spec, {"/bin/true"});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(exit_status_for_launch_error(broken.error()), kSetupFailedStatus);
  EXPECT_NE(broken.error().what.find("enter the desk folder"), std::string::npos) << broken.error().what;
  EXPECT_NE(broken.error().what.find((root / "gone").native()), std::string::npos) << broken.error().what;
  fs::remove_all(root);
}

// The two-step start an event loop uses: start_sandboxed returns before the child's set-up
// is over; its report descriptor becomes readable when it is, and finish() gives the same
// process or the same errors as launch_sandboxed. Dropping it unfinished leaves no child.
TEST(LauncherTest, AStartedSandboxIsFinishedOrDroppedWithTheSameOutcomes) {
  char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();

  auto started = start_sandboxed(spec, {"/bin/sh", "-c", "exit 7"});
  ASSERT_TRUE(started.ok()) << started.error().what;
  pollfd report{started->report_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&report, 1, 10000), 1);
  auto running = std::move(*started).finish();
  ASSERT_TRUE(running.ok()) << running.error().what;
  EXPECT_EQ(running->wait().value(), 7);

  auto missing = start_sandboxed(spec, {"no-such-command-anywhere"});
  ASSERT_TRUE(missing.ok()) << "the command is looked for inside the sandbox, after the start";
  auto not_found = std::move(*missing).finish();
  ASSERT_FALSE(not_found.ok());
  EXPECT_EQ(exit_status_for_launch_error(not_found.error()), kNotFoundStatus);

  // An event loop that waited on the report descriptor leaves the pipe non-blocking (the
  // flag is the open pipe's, shared with the loop's dup): finish() still waits for the
  // set-up rather than taking "would block" for success.
  auto early = start_sandboxed(spec, {"/bin/sh", "-c", "exit 9"});
  ASSERT_TRUE(early.ok()) << early.error().what;
  ASSERT_EQ(::fcntl(early->report_fd(), F_SETFL, O_NONBLOCK), 0);
  auto finished_early = std::move(*early).finish();
  ASSERT_TRUE(finished_early.ok()) << finished_early.error().what;
  EXPECT_EQ(finished_early->wait().value(), 9);

  pid_t dropped_pid = 0;
  {
    auto dropped = start_sandboxed(spec, {"/bin/sleep", "30"});
    ASSERT_TRUE(dropped.ok()) << dropped.error().what;
    dropped_pid = dropped->pid();
  }
  EXPECT_NE(::kill(dropped_pid, 0), 0) << "a dropped start is killed and reaped";
  EXPECT_FALSE(start_sandboxed(spec, {}).ok());
  fs::remove_all(root);
}

// A relay source that keeps deskd's end, as the egress proxy would, to read what the
// sandbox's forwarder hands over.
class KeptRelay final : public EgressRelaySource {
 public:
  Result<UniqueFd> open_relay() override {
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) return Error::from_errno(errno, "socketpair");
    kept = UniqueFd(ends[0]);
    return UniqueFd(ends[1]);
  }
  UniqueFd kept;
};

fs::path launcher_test_folder() {
  char pattern[] = "/var/tmp/deskd-launcher-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  return root;
}

// Every process of a sandbox is counted in the sandbox's own cgroup, from its first
// instruction on: under cgroup v1 the child joins it itself (no CLONE_INTO_CGROUP there).
TEST(LauncherTest, TheCommandRunsInTheSandboxsOwnCgroup) {
  const SupportCheck limits = check_desk_limits();
  if (!limits.available) GTEST_SKIP() << "this deskd gets no cgroup (no delegated cgroup v2 subtree, and not root for v1): " << limits.detail;
  const bool version2 = limits.detail.rfind("cgroup v2", 0) == 0;
  const fs::path root = launcher_test_folder();
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).build().value();
  for (int launch = 0; launch < 3; ++launch) {
    int ends[2];
    ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
    auto process = launch_sandboxed(spec, {"/bin/cat", "/proc/self/cgroup"}, StandardStreams{-1, ends[1], -1});
    ::close(ends[1]);
    ASSERT_TRUE(process.ok()) << process.error().what;
    std::string text;
    char buffer[4096];
    for (ssize_t count; (count = ::read(ends[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(count));
    ::close(ends[0]);
    EXPECT_EQ(process->wait().value(), 0);
    std::vector<std::string> expected_lines = version2 ? std::vector<std::string>{"0::"}
                                                       : std::vector<std::string>{":memory:", ":pids:"};
    for (const auto& key : expected_lines) {
      const std::size_t at = text.find(key);
      ASSERT_NE(at, std::string::npos) << text;
      const std::string line = text.substr(at, text.find('\n', at) - at);
      EXPECT_NE(line.find("/sandbox-"), std::string::npos) << "launch " << launch << ": " << line << "\n" << text;
    }
  }
  fs::remove_all(root);
}

// The lines a sandbox wrote to `fd` until `until` appears, the pipe closes or 30 s pass.
// A desk's sandboxes (its bash, its subagents' bashes, its file opener) share the desk's one
// cgroup and its limits: three sandboxes of one spec, each holding 110 MiB under a 200 MiB
// desk, cannot all hold it — and each sandbox has a cgroup of its own inside the desk's.
TEST(LauncherTest, SandboxesOfOneSpecShareTheDesksLimits) {
  const SupportCheck limits = check_desk_limits();
  if (!limits.available) GTEST_SKIP() << "this deskd gets no cgroup: " << limits.detail;
  const fs::path root = launcher_test_folder();
  auto spec =
      SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).memory_limit(std::uint64_t{200} << 20).build().value();
  const std::string hold =
      "cat /proc/self/cgroup; exec python3 -c \"import time\nb = b'\\x01' * (110 << 20)\nprint('held', flush=True)\n"
      "time.sleep(60)\"";
  std::vector<SandboxedProcess> sandboxes;
  std::vector<std::string> outputs;
  for (int index = 0; index < 3; ++index) {
    int ends[2];
    ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
    auto process = launch_sandboxed(spec, {"/bin/bash", "-c", hold}, StandardStreams{-1, ends[1], ends[1]});
    ::close(ends[1]);
    ASSERT_TRUE(process.ok()) << process.error().what;
    outputs.push_back(pipe_test::read_until(ends[0], "held"));
    ::close(ends[0]);
    sandboxes.push_back(std::move(process).value());
  }
  std::set<std::string> desks, own;
  int holding = 0;
  std::uint64_t kills = 0;
  for (std::size_t index = 0; index < sandboxes.size(); ++index) {
    const std::string line = cgroup_test::memory_cgroup_line(outputs[index]);
    const std::size_t desk = line.find("/desk-");
    const std::size_t sandbox = line.find("/sandbox-");
    ASSERT_NE(desk, std::string::npos) << outputs[index];
    ASSERT_NE(sandbox, std::string::npos) << outputs[index];
    desks.insert(line.substr(desk, sandbox - desk));
    own.insert(line.substr(sandbox));
    // Whole tokens between '/', '-' and ':': the names' random hex may hold the pid's digits.
    const std::regex pid_token("(^|[/:-])" + std::to_string(::getpid()) + "($|[/:-])");
    EXPECT_FALSE(std::regex_search(line, pid_token)) << "the cgroup names deskd's pid: " << line;
    kills += sandboxes[index].limit_hits(1024).memory_kills;
  }
  // The kernel kills at the limit at once, but its victim exits (and is seen to) a moment
  // later: a sandbox killed for the last one's 110 MiB may still be exiting when that one
  // says "held".
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    holding = 0;
    for (std::size_t index = 0; index < sandboxes.size(); ++index) {
      const bool running = !sandboxes[index].wait_for(std::chrono::milliseconds(0)).value().has_value();
      if (running && outputs[index].find("held") != std::string::npos) ++holding;
    }
    if (holding <= 1 || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(desks.size(), 1u) << "the sandboxes of one desk are in different desk cgroups";
  EXPECT_EQ(own.size(), 3u) << "two sandboxes share a cgroup of their own";
  EXPECT_LE(holding, 1) << holding << " sandboxes hold 110 MiB each under one 200 MiB desk";
  EXPECT_GE(kills, 1u) << "nothing was killed at the desk's memory limit";
  sandboxes.clear();
  fs::remove_all(root);
}

TEST(LauncherTest, AnAllowlistSandboxWithoutAProxyDoesNotStart) {
  const fs::path root = launcher_test_folder();
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).network(NetworkMode::allowlist).build().value();
  auto launched = launch_sandboxed(spec, {"/bin/true"});
  ASSERT_FALSE(launched.ok());
  EXPECT_NE(launched.error().what.find("needs deskd's egress proxy"), std::string::npos) << launched.error().what;
  fs::remove_all(root);
}

TEST(LauncherTest, TheForwarderHandsEachLoopbackConnectionToTheRelayAndTheCommandHoldsNoRelay) {
  const fs::path root = launcher_test_folder();
  auto spec = SandboxSpecBuilder(policy::Confinement::create(root, {}).value()).network(NetworkMode::allowlist).build().value();
  auto relay = std::make_shared<KeptRelay>();
  spec.egress = relay;
  int output[2];
  ASSERT_EQ(::pipe2(output, O_CLOEXEC), 0);
  // bash's /dev/tcp connects to the forwarder; the command's own descriptors are listed first.
  auto process = launch_sandboxed(
      spec,
      {"/bin/bash", "-c",
       "ls /proc/self/fd | tr '\\n' ' '; echo; exec 5<>/dev/tcp/127.0.0.1/3128; echo through >&5; read -r -t 20 back <&5; "
       "echo $back"},
      StandardStreams{-1, output[1], output[1]});
  ::close(output[1]);
  ASSERT_TRUE(process.ok()) << process.error().what;
  char byte = 0;
  iovec part{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ASSERT_EQ(::recvmsg(relay->kept.get(), &message, MSG_CMSG_CLOEXEC), 1);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  ASSERT_NE(header, nullptr);
  ASSERT_EQ(header->cmsg_type, SCM_RIGHTS);
  int connection = -1;
  std::memcpy(&connection, CMSG_DATA(header), sizeof connection);
  UniqueFd accepted(connection);
  char text[64] = {};
  EXPECT_EQ(::read(accepted.get(), text, sizeof text - 1), 8);
  EXPECT_STREQ(text, "through\n");
  ASSERT_EQ(::write(accepted.get(), "back\n", 5), 5);
  auto status = process->wait();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 0);
  std::string listed(256, '\0');
  listed.resize(static_cast<std::size_t>(std::max<ssize_t>(0, ::read(output[0], listed.data(), listed.size()))));
  ::close(output[0]);
  EXPECT_EQ(listed, "0 1 2 3 \nback\n") << "the command got a descriptor it should not have";
  fs::remove_all(root);
}

}  // namespace
}  // namespace deskd::sandbox
