// The desk's trust in the sandbox (sandbox/trust_bundle.h): a desk behind the API gate sees
// deskd's bundle, byte for byte and read-only, where the system bundle is, and the variables
// its tools read name it; a desk without one sees the host's bundle. Real sandboxes, under
// both host views, launched by a root deskd (this test) and by an unprivileged one (a child
// of the test that drops to an ordinary uid first).

#include "sandbox/trust_bundle.h"

#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sandbox/launcher.h"
#include "sandbox/mount_plan.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uid_t kUnprivilegedUid = 4242;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t count; (count = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, count);
  return text;
}

// What `command` printed in a sandbox of `spec`, and its exit status; a launch that failed
// reads as its error's sentence with status -1.
struct SandboxOutcome {
  int status = -1;
  std::string out;
};

SandboxOutcome run_in(const SandboxSpec& spec, const std::vector<std::string>& command) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  auto process = launch_sandboxed(spec, command, StandardStreams{-1, fds[1], fds[1]});
  ::close(fds[1]);
  if (!process.ok()) {
    ::close(fds[0]);
    return {-1, process.error().what};
  }
  SandboxOutcome run{.out = read_all(fds[0])};
  ::close(fds[0]);
  auto status = process->wait();
  run.status = status.ok() ? *status : -1;
  return run;
}

enum class Daemon { root, unprivileged };

// One launch, as deskd would make it for the desk: its spec built from the desk folder, the
// hidden state folder, the view and (or not) the trust bundle.
struct LaunchRequest {
  fs::path desk;
  fs::path state;
  HostView view = HostView::minimal;
  std::optional<fs::path> bundle;
  std::vector<std::string> command;
};

SandboxOutcome launch_desk(const LaunchRequest& request) {
  const fs::path hidden[] = {request.state};
  auto confinement = policy::Confinement::create(request.desk, hidden);
  if (!confinement.ok()) return {-1, confinement.error().what};
  SandboxSpecBuilder builder(*confinement);
  builder.host_view(request.view);
  if (request.bundle) builder.trust_bundle(*request.bundle);
  auto spec = builder.build();
  if (!spec.ok()) return {-1, spec.error().what};
  return run_in(*spec, request.command);
}

// The unprivileged daemon: this binary is run again, as root, with only the helper test
// below, which becomes an ordinary user before anything of deskd runs, launches what the
// request in its environment asks, and writes "STATUS n" and the output to descriptor 100.
constexpr const char* kRequestVariable = "DESKD_TRUST_BUNDLE_LAUNCH";
constexpr int kResultDescriptor = 100;
constexpr char kSeparator = '\x1f';

std::string encoded(const LaunchRequest& request) {
  std::string text = request.desk.native() + kSeparator + request.state.native() + kSeparator +
                     (request.view == HostView::full ? "full" : "minimal") + kSeparator +
                     (request.bundle ? request.bundle->native() : "");
  for (const auto& argument : request.command) text += kSeparator + argument;
  return text;
}

LaunchRequest decoded(const std::string& text) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find(kSeparator, start)) != std::string::npos; start = end + 1) {
    fields.push_back(text.substr(start, end - start));
  }
  fields.push_back(text.substr(start));
  LaunchRequest request;
  if (fields.size() < 5) return request;
  request.desk = fields[0];
  request.state = fields[1];
  request.view = fields[2] == "full" ? HostView::full : HostView::minimal;
  if (!fields[3].empty()) request.bundle = fields[3];
  request.command.assign(fields.begin() + 4, fields.end());
  return request;
}

SandboxOutcome launch_as_ordinary_user(const LaunchRequest& request) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.emplace_back(*entry);
  environment.push_back(std::string(kRequestVariable) + "=" + encoded(request));
  std::vector<char*> environment_pointers;
  for (auto& entry : environment) environment_pointers.push_back(entry.data());
  environment_pointers.push_back(nullptr);
  std::string program = fs::read_symlink("/proc/self/exe").native();
  std::string filter = "--gtest_filter=TrustBundleOrdinaryUser.LaunchesWhatItIsAsked";
  char* arguments[] = {program.data(), filter.data(), nullptr};

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, "pipe2 failed"};
  const pid_t child = ::fork();
  if (child == 0) {
    const int quiet = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (::dup2(fds[1], kResultDescriptor) < 0 || quiet < 0 || ::dup2(quiet, STDOUT_FILENO) < 0) ::_exit(126);
    ::execve(program.c_str(), arguments, environment_pointers.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  const std::string text = read_all(fds[0]);
  ::close(fds[0]);
  int status = -1;
  if (child > 0) ::waitpid(child, &status, 0);
  const std::size_t line_end = text.find('\n');
  if (text.rfind("STATUS ", 0) != 0 || line_end == std::string::npos) {
    return {-1, "the helper (wait status " + std::to_string(status) + ") reported: " + text};
  }
  return {std::stoi(text.substr(7, line_end - 7)), text.substr(line_end + 1)};
}

TEST(TrustBundleOrdinaryUser, LaunchesWhatItIsAsked) {
  const char* request = std::getenv(kRequestVariable);
  if (request == nullptr) GTEST_SKIP() << "run by TrustBundleTest for the unprivileged daemon";
  ASSERT_EQ(::setgroups(0, nullptr), 0);
  ASSERT_EQ(::setresgid(kUnprivilegedUid, kUnprivilegedUid, kUnprivilegedUid), 0);
  ASSERT_EQ(::setresuid(kUnprivilegedUid, kUnprivilegedUid, kUnprivilegedUid), 0);
  // As an exec of deskd by that user would be: a change of ids leaves the process undumpable,
  // and its /proc files (uid_map, setgroups) root's.
  ASSERT_EQ(::prctl(PR_SET_DUMPABLE, 1), 0);
  const SandboxOutcome outcome = launch_desk(decoded(request));
  const std::string text = "STATUS " + std::to_string(outcome.status) + "\n" + outcome.out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t written = ::write(kResultDescriptor, rest.data(), rest.size());
    ASSERT_GT(written, 0);
    rest.remove_prefix(static_cast<std::size_t>(written));
  }
  ::close(kResultDescriptor);
}

// A desk in /var/tmp beside a 0700 state folder (hidden from the desk, as deskd's is) that
// holds the trust bundle; all of it the unprivileged daemon's for that daemon.
class TrustBundleTest : public ::testing::TestWithParam<std::tuple<Daemon, HostView>> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to act as both daemons";
    char pattern[] = "/var/tmp/deskd-trust-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(desk() / "notes");
    fs::create_directories(state());
    fs::permissions(state(), fs::perms::owner_all);
    bundle_text_ = read_file("/etc/ssl/certs/ca-certificates.crt") +
                   "\n-----BEGIN CERTIFICATE-----\nnot a certificate: " + root_.filename().native() +
                   "\n-----END CERTIFICATE-----\n";
    std::ofstream(bundle(), std::ios::binary) << bundle_text_;
    fs::permissions(bundle(),
                    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
    if (daemon() == Daemon::unprivileged) {
      for (const auto& path : {desk(), desk() / "notes", state(), bundle()}) {
        ASSERT_EQ(::chown(path.c_str(), kUnprivilegedUid, kUnprivilegedUid), 0) << path;
      }
    }
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  Daemon daemon() const { return std::get<0>(GetParam()); }
  HostView view() const { return std::get<1>(GetParam()); }
  fs::path desk() const { return root_ / "desk"; }
  fs::path state() const { return root_ / "state"; }
  fs::path bundle() const { return state() / "trust-bundle.pem"; }

  // Runs `command` as the daemon would: as root here, or as an ordinary user in a fresh
  // process (this binary run again for the helper test below): deskd looks up its cgroups
  // once per process, and what root found here is not an ordinary user's to use.
  SandboxOutcome run(bool with_bundle, const std::vector<std::string>& command) const {
    LaunchRequest request{desk(), state(), view(), std::nullopt, command};
    if (with_bundle) request.bundle = bundle();
    if (daemon() == Daemon::root) return launch_desk(request);
    return launch_as_ordinary_user(request);
  }

  fs::path root_;
  std::string bundle_text_;
};

TEST_P(TrustBundleTest, TheDeskSeesItsBundleExactlyAndCannotWriteIt) {
  const SandboxOutcome shown = run(true, {"/bin/cat", kTrustBundleInView});
  ASSERT_EQ(shown.status, 0) << shown.out;
  EXPECT_TRUE(shown.out == bundle_text_) << "the view's bundle differs from deskd's (" << shown.out.size() << " bytes, "
                                         << bundle_text_.size() << " expected)";

  const SandboxOutcome written = run(true, {"/bin/sh", "-c", std::string("echo extra >> ") + kTrustBundleInView});
  EXPECT_NE(written.status, 0);
  EXPECT_THAT(written.out, ::testing::AnyOf(HasSubstr("Read-only file system"), HasSubstr("Permission denied")))
      << written.out;
  EXPECT_EQ(read_file(bundle()), bundle_text_);

  // Neither the file nor the state folder it came from is reachable by its host path.
  const SandboxOutcome state = run(true, {"/bin/cat", bundle().native()});
  EXPECT_NE(state.status, 0) << state.out;
  EXPECT_THAT(state.out, ::testing::Not(HasSubstr("not a certificate")));
}

TEST_P(TrustBundleTest, TheDesksToolsAreToldOfTheBundle) {
  const SandboxOutcome environment = run(true, {"/usr/bin/env"});
  ASSERT_EQ(environment.status, 0) << environment.out;
  for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"}) {
    EXPECT_THAT(environment.out, HasSubstr(std::string(name) + "=/etc/ssl/certs/ca-certificates.crt\n")) << name;
  }
}

TEST_P(TrustBundleTest, ADeskWithoutABundleSeesTheHostsUnchanged) {
  const SandboxOutcome shown = run(false, {"/bin/cat", kTrustBundleInView});
  ASSERT_EQ(shown.status, 0) << shown.out;
  EXPECT_TRUE(shown.out == read_file("/etc/ssl/certs/ca-certificates.crt"));
  const SandboxOutcome environment = run(false, {"/usr/bin/env"});
  EXPECT_THAT(environment.out, ::testing::Not(HasSubstr("SSL_CERT_FILE")));
}

TEST_P(TrustBundleTest, AMissingBundleFailsTheLaunchNamingTheStep) {
  fs::remove(bundle());
  const SandboxOutcome shown = run(true, {"/bin/true"});
  EXPECT_NE(shown.status, 0);
  EXPECT_THAT(shown.out, HasSubstr("trust bundle")) << shown.out;
}

std::string test_name(const ::testing::TestParamInfo<std::tuple<Daemon, HostView>>& parameter) {
  return std::string(std::get<0>(parameter.param) == Daemon::root ? "RootDaemon" : "UnprivilegedDaemon") +
         (std::get<1>(parameter.param) == HostView::minimal ? "MinimalView" : "FullView");
}

INSTANTIATE_TEST_SUITE_P(DaemonsAndViews, TrustBundleTest,
                         ::testing::Combine(::testing::Values(Daemon::root, Daemon::unprivileged),
                                            ::testing::Values(HostView::minimal, HostView::full)),
                         test_name);

// ---- the plan and the spec, without launching ----

class TrustBundlePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-trust-plan-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::create_directories(root_ / "desk");
    fs::create_directories(root_ / "state");
  }
  void TearDown() override { fs::remove_all(root_); }
  policy::Confinement confinement() const {
    const fs::path hidden[] = {root_ / "state"};
    return policy::Confinement::create(root_ / "desk", hidden).value();
  }
  fs::path root_;
};

TEST_F(TrustBundlePlanTest, TheBundleIsBoundFromTheHostAfterTheMasksAndBeforeThePivot) {
  const auto spec = SandboxSpecBuilder(confinement()).trust_bundle(root_ / "state" / "bundle.pem").build();
  ASSERT_TRUE(spec.ok()) << spec.error().what;
  const auto steps = plan_mounts(*spec);
  const auto position = [&](MountStep::Operation operation, const std::string& target) {
    for (std::size_t index = 0; index < steps.size(); ++index) {
      if (steps[index].operation == operation && steps[index].target == target) return index;
    }
    return steps.size();
  };
  const auto mask = position(MountStep::Operation::mask, in_new_root((root_ / "state").native()));
  const auto bind = position(MountStep::Operation::bind, in_new_root(kTrustBundleInView));
  const auto sealed = position(MountStep::Operation::set_attributes, in_new_root(kTrustBundleInView));
  const auto pivot = position(MountStep::Operation::pivot_into_new_root, kNewRoot);
  ASSERT_LT(bind, steps.size());
  EXPECT_LT(mask, bind);
  EXPECT_EQ(sealed, bind + 1);
  EXPECT_LT(sealed, pivot);
  EXPECT_EQ(steps[bind].source, std::string(kOldRoot) + (root_ / "state" / "bundle.pem").native());
  EXPECT_TRUE(steps[bind].opened_by_daemon);
  EXPECT_EQ(steps[sealed].attributes_set, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);

  const auto plain = plan_mounts(SandboxSpecBuilder(confinement()).build().value());
  EXPECT_TRUE(std::none_of(plain.begin(), plain.end(),
                           [](const MountStep& step) { return step.target == in_new_root(kTrustBundleInView); }));
}

TEST_F(TrustBundlePlanTest, TheBundlesVariablesOverrideWhatTheAllowlistCopied) {
  ::setenv("SSL_CERT_FILE", "/somewhere/else.pem", 1);
  const auto spec = SandboxSpecBuilder(confinement())
                        .allow_environment_variable("SSL_CERT_FILE")
                        .trust_bundle(root_ / "state" / "bundle.pem")
                        .build();
  const auto without = SandboxSpecBuilder(confinement()).allow_environment_variable("SSL_CERT_FILE").build();
  ::unsetenv("SSL_CERT_FILE");
  ASSERT_TRUE(spec.ok() && without.ok());
  const auto& environment = spec->environment;
  for (const auto& entry : trust_bundle_environment()) {
    EXPECT_EQ(std::count(environment.begin(), environment.end(), entry), 1) << entry;
  }
  EXPECT_EQ(std::count(environment.begin(), environment.end(), "SSL_CERT_FILE=/somewhere/else.pem"), 0);
  EXPECT_EQ(std::count(without->environment.begin(), without->environment.end(), "SSL_CERT_FILE=/somewhere/else.pem"),
            1);

  // Given to a spec already built, as whoever attaches the API gate does.
  SandboxSpec later = *without;
  use_trust_bundle(later, root_ / "state" / "bundle.pem");
  EXPECT_EQ(later.trust_bundle, root_ / "state" / "bundle.pem");
  EXPECT_EQ(std::count(later.environment.begin(), later.environment.end(), "SSL_CERT_FILE=/somewhere/else.pem"), 0);
  EXPECT_EQ(std::count(later.environment.begin(), later.environment.end(),
                       "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"),
            1);

  EXPECT_FALSE(SandboxSpecBuilder(confinement()).trust_bundle("relative.pem").build().ok());
}

}  // namespace
}  // namespace deskd::sandbox
