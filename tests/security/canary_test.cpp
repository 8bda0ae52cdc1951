// One world per desk (issue 11): no process a desk can see was ever a copy of the daemon.
// deskd runs with a canary in its own environment (never passed with --env); probe_scan,
// given the canary hex-encoded, searches the command line, environment and memory of every
// process the sandbox shows. Today pid 1 is a fork of deskd: its memory and environment are
// the daemon's, and its command line is deskd's own.

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string hex(std::string_view text) {
  static const char kDigits[] = "0123456789abcdef";
  std::string encoded;
  for (unsigned char each : text) {
    encoded += kDigits[each >> 4];
    encoded += kDigits[each & 15];
  }
  return encoded;
}

// One "pid=N comm=... cmdline=... environ=... mem=... bytes=M" line of probe_scan.
struct ScannedProcess {
  std::map<std::string, std::string> fields;
  std::string line;
  bool leaked() const {
    for (const char* where : {"cmdline", "environ", "mem"})
      if (fields.count(where) != 0 && fields.at(where) == "found") return true;
    return false;
  }
};

struct Scan {
  std::map<int, ScannedProcess> processes;
  std::string summary;  // "found=K scanned=P", empty when the probe did not finish
};

Scan parse_scan(const std::string& output) {
  Scan scan;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("found=", 0) == 0) scan.summary = line;
    if (line.rfind("pid=", 0) != 0) continue;
    ScannedProcess process;
    process.line = line;
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      const auto equals = word.find('=');
      if (equals != std::string::npos) process.fields[word.substr(0, equals)] = word.substr(equals + 1);
    }
    scan.processes[std::stoi(process.fields["pid"])] = process;
  }
  return scan;
}

// Names every process that holds the canary, and where: the failure message.
std::string leaks(const Scan& scan) {
  std::string text;
  for (const auto& [pid, process] : scan.processes)
    if (process.leaked()) text += "  the canary in deskd's environment is visible in " + process.line + "\n";
  return text;
}

class CanaryTest : public SandboxTest {
 protected:
  CanaryTest() : canary_(unique_name("deskd-canary")) {
    options_.environment.push_back("DESKD_TEST_CANARY=" + canary_);
  }

  // Runs `bash -c SCRIPT` in the desk's sandbox, deskd holding the canary.
  SandboxRun run_script(const std::string& script) const {
    return sandbox({"/bin/bash", "-c", script}, {}, options_);
  }

  // The scan is run; pid 1 must have been scanned, hold no canary anywhere, and show an
  // environment that is empty or that the kernel refuses.
  void expect_no_canary(const SandboxRun& run, size_t fewest_processes) const {
    const Scan scan = parse_scan(run.out);
    ASSERT_FALSE(scan.summary.empty()) << "probe_scan did not finish\n" << run.describe();
    EXPECT_EQ(leaks(scan), "") << run.describe();
    if (leaks(scan).empty()) {  // the lines agree with the summary and the exit status
      EXPECT_THAT(scan.summary, ::testing::StartsWith("found=0 ")) << run.describe();
      EXPECT_EQ(run.exit_status, 0) << run.describe();
    }
    EXPECT_GE(scan.processes.size(), fewest_processes) << "the probe saw fewer processes than ran\n"
                                                       << run.describe();
    ASSERT_EQ(scan.processes.count(1), 1u) << "pid 1 was not scanned\n" << run.describe();
    const std::string environ_outcome = scan.processes.at(1).fields.at("environ");
    const bool empty = run.out.find("pid1-environ-bytes=0\n") != std::string::npos;
    EXPECT_TRUE(environ_outcome == "denied" || empty)
        << "pid 1's environment is readable and not empty: it was inherited, not a fresh init's";
    EXPECT_THAT(run.out + run.err, Not(HasSubstr(canary_)));
  }

  std::string scan_command() const { return probe("probe_scan") + " " + hex(canary_); }
  static constexpr const char* kPidOneEnvironmentBytes =
      "echo \"pid1-environ-bytes=$(cat /proc/1/environ 2>/dev/null | wc -c)\"\n";

  std::string canary_;
  LaunchOptions options_;
};

TEST_P(CanaryTest, DaemonsEnvironmentIsInNoProcessOfTheSandbox) {
  // bash, the probe and the init: the least a desk's terminal shows.
  const std::string script =
      scan_command() + "\nstatus=$?\n" + kPidOneEnvironmentBytes + "exit $status\n";
  expect_no_canary(run_script(script), 2);
}

TEST_P(CanaryTest, DaemonsEnvironmentIsInNoProcessOfTheSandboxWithABackgroundJob) {
  // Until the job has exec'd sleep, it is a copy of bash.
  const std::string script = "sleep 60 &\nuntil [ \"$(cat /proc/$!/comm 2>/dev/null)\" = sleep ]; do :; done\n" +
                             scan_command() + "\nstatus=$?\n" + kPidOneEnvironmentBytes +
                             "kill $! 2>/dev/null\nexit $status\n";
  const SandboxRun run = run_script(script);
  expect_no_canary(run, 3);
  const Scan scan = parse_scan(run.out);
  bool saw_sleep = false;
  for (const auto& [pid, process] : scan.processes) saw_sleep |= process.fields.at("comm") == "sleep";
  EXPECT_TRUE(saw_sleep) << "the background sleep was not among the scanned processes\n" << run.describe();
}

TEST_P(CanaryTest, PidOneHasNoEnvironmentAndNotTheDaemonsCommandLine) {
  const std::string script =
      "printf 'environ['; cat /proc/1/environ 2>/dev/null | tr '\\0' ' '; echo ']'\n"
      "printf 'cmdline['; tr '\\0' ' ' < /proc/1/cmdline; echo ']'\n";
  const SandboxRun run = run_script(script);
  ASSERT_EQ(run.exit_status, 0) << run.describe();
  const auto between = [&](const std::string& label) {
    const auto start = run.out.find(label + "[");
    if (start == std::string::npos) return std::string("(missing)");
    const auto from = start + label.size() + 1;
    return run.out.substr(from, run.out.find("]\n", from) - from);
  };
  const std::string environment = between("environ");
  const std::string command_line = between("cmdline");
  EXPECT_EQ(environment, "") << "cat /proc/1/environ shows deskd's environment to the desk";
  EXPECT_THAT(environment, Not(HasSubstr(canary_)));
  std::string daemons_words;
  for (const std::string& word : {std::string("--desk"), std::string("sandbox"), desk().directory(), deskd_binary()}) {
    if (command_line.find(word) != std::string::npos) daemons_words += " \"" + word + "\"";
  }
  EXPECT_EQ(daemons_words, "") << "pid 1's command line is deskd's own, so pid 1 is a copy of the daemon: "
                               << command_line;
}

DESKD_FOR_BOTH_DAEMONS(CanaryTest);

}  // namespace
}  // namespace deskd::security_testing
