// refusal_cost_bench: what reporting a refused system call costs. bench/refusal_cost runs it;
// see bench/README.md.
//
// It makes a temporary desk under /var/tmp (removed at the end) and, in a sandboxed bash,
// runs itself in --loop mode: N calls of a refused system call (mount with no arguments,
// EPERM) or of an allowed one (getppid), timed inside the sandbox (CLOCK_MONOTONIC). Each
// is run with reporting off (the filter answers EPERM itself) and on (the kernel hands the
// call to deskd's seccomp listener, which records and answers it), --rounds times, the
// median kept. Prints key=value lines (refusal_cost_...), then a summary line ('#').

#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "base/clock.h"
#include "policy/confinement.h"
#include "runner/desk/refusal_recorder.h"
#include "runner/tools/bash_session.h"
#include "sandbox/desk_preparation.h"

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

double now_ns() {
  timespec time{};
  clock_gettime(CLOCK_MONOTONIC, &time);
  return static_cast<double>(time.tv_sec) * 1e9 + static_cast<double>(time.tv_nsec);
}

// Inside the sandbox: the timed loop.
int loop(const std::string& which, long calls) {
  const bool refused = which == "refused";
  long failures = 0;
  const double start = now_ns();
  for (long call = 0; call < calls; ++call) {
    const long result = refused ? ::syscall(SYS_mount, nullptr, nullptr, nullptr, 0, nullptr) : ::syscall(SYS_getppid);
    if (result < 0 && errno == EPERM) ++failures;
  }
  const double elapsed = now_ns() - start;
  if (refused && failures != calls) {
    std::fprintf(stderr, "only %ld of %ld refused calls failed with EPERM\n", failures, calls);
    return 1;
  }
  std::printf("%.1f\n", elapsed / static_cast<double>(calls));
  return 0;
}

struct Bench {
  asio::io_context context;
  deskd::SystemClock clock;
  deskd::desk::EventBus bus{clock};
  fs::path root;
  std::string self;

  double deskd_cpu_ns = 0;  // deskd's own CPU time (user + system) in the last run_loop

  static double cpu_ns() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto ns = [](const timeval& time) { return static_cast<double>(time.tv_sec) * 1e9 + time.tv_usec * 1e3; };
    return ns(usage.ru_utime) + ns(usage.ru_stime);
  }

  double run_loop(bool reporting, const std::string& which, long calls) {
    auto confinement = deskd::policy::Confinement::create(root / "desk", {}).value();
    auto spec = deskd::sandbox::SandboxSpecBuilder(confinement).show_read_only(fs::path(self).parent_path()).build();
    if (!spec.ok()) throw std::runtime_error(spec.error().what);
    if (!deskd::sandbox::prepare_desk_for_sandbox(*spec).ok()) throw std::runtime_error("cannot prepare the desk");
    auto recorder = deskd::desk::DeskRefusalRecorder::create(context.get_executor(), bus, "bench", clock);
    if (reporting) spec->refusals = recorder;
    deskd::tools::BashSession session(context.get_executor(), *spec, 120, 20000);
    session.prepare();  // the terminal's start is not the loop's cost
    while (context.run_one_for(std::chrono::milliseconds(200)) > 0) {}
    const double cpu_before = cpu_ns();
    auto future =
        asio::co_spawn(context, session.run(self + " --loop " + which + " " + std::to_string(calls)), asio::use_future);
    context.restart();
    while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      context.run_one_for(std::chrono::milliseconds(20));
    }
    deskd_cpu_ns = (cpu_ns() - cpu_before) / static_cast<double>(calls);
    const deskd::tools::CommandOutcome outcome = future.get();
    if (outcome.exit_status != 0) throw std::runtime_error("the loop failed: " + outcome.output);
    return std::strtod(outcome.output.c_str(), nullptr);
  }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--loop") == 0) return loop(argv[2], std::atol(argv[3]));
  long calls = 200000;
  int rounds = 5;
  for (int index = 1; index + 1 < argc; index += 2) {
    if (std::strcmp(argv[index], "--calls") == 0)
      calls = std::atol(argv[index + 1]);
    else if (std::strcmp(argv[index], "--rounds") == 0)
      rounds = std::atoi(argv[index + 1]);
    else {
      std::fprintf(stderr, "usage: refusal_cost_bench [--calls N] [--rounds N]\n");
      return 2;
    }
  }
  Bench bench;
  bench.self = fs::canonical("/proc/self/exe").native();
  char pattern[] = "/var/tmp/deskd-refusal-bench-XXXXXX";
  bench.root = ::mkdtemp(pattern);
  fs::permissions(bench.root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  fs::create_directories(bench.root / "desk");
  int status = 0;
  try {
    std::vector<double> samples[4];  // refused off, refused on, allowed off, allowed on
    std::vector<double> deskd_cpu;   // deskd's CPU time per reported refusal
    for (int round = 0; round < rounds; ++round) {
      samples[0].push_back(bench.run_loop(false, "refused", calls));
      samples[1].push_back(bench.run_loop(true, "refused", calls));
      deskd_cpu.push_back(bench.deskd_cpu_ns);
      samples[2].push_back(bench.run_loop(false, "allowed", calls));
      samples[3].push_back(bench.run_loop(true, "allowed", calls));
    }
    const double refused_off = median(samples[0]), refused_on = median(samples[1]);
    const double allowed_off = median(samples[2]), allowed_on = median(samples[3]);
    std::printf("refusal_cost_calls=%ld\nrefusal_cost_rounds=%d\n", calls, rounds);
    std::printf("refusal_cost_refused_plain_ns=%.1f\nrefusal_cost_refused_reported_ns=%.1f\n", refused_off, refused_on);
    std::printf("refusal_cost_allowed_plain_ns=%.1f\nrefusal_cost_allowed_reporting_ns=%.1f\n", allowed_off,
                allowed_on);
    std::printf("refusal_cost_deskd_cpu_per_refusal_ns=%.1f\n", median(deskd_cpu));
    std::printf(
        "# a refused call: %.0f ns reported against %.0f ns plain EPERM (x%.1f); an allowed call: %.0f ns "
        "with reporting on against %.0f ns off (x%.2f). Medians of %d rounds of %ld calls.\n",
        refused_on, refused_off, refused_on / refused_off, allowed_on, allowed_off, allowed_on / allowed_off, rounds,
        calls);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "refusal_cost_bench: %s\n", error.what());
    status = 1;
  }
  fs::remove_all(bench.root);
  return status;
}
