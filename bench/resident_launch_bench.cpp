// resident_launch_bench: a desk's sandbox started by a running deskd, for bench/cold_start.
//
// `deskd sandbox -- true` pays for a process start of deskd on every launch (exec, the
// dynamic loader, reading the uid registry, finding the cgroup hierarchies, and exiting);
// a desk's turn in `deskd serve` does not: the daemon is already running, and starts each
// sandbox the way a desk's terminal does (launcher.h, start_sandboxed, then finish). This
// program is that resident deskd, kept alive beside bench/cold_start's loop so that its
// launches interleave with bubblewrap's and share the machine's noise: for each line
// "launch" on stdin it starts one sandbox running `true` in the desk's spec (the one
// `deskd serve` builds: build_desk_sandbox_spec), waits for it and drops it (its cgroup
// removed), and prints the milliseconds it took (CLOCK_MONOTONIC) on a line of its own.
// A launch that fails or a `true` that does not exit 0 prints "error: ..." and ends it.
//
// usage: resident_launch_bench [--desk-cgroup-held] [--memory-mb MB]
//   --desk-cgroup-held  keep the desk's cgroup alive between launches, as a desk whose
//                       file opener or bash is running does (each launch then makes only
//                       its own sandbox cgroup); without it each launch is a desk's first.
//   --memory-mb MB      hold MB of written memory first, as a deskd with many desks does
//                       (about 100 KB a desk): what a launch that copied deskd would pay.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "bench/temporary_desk.h"
#include "sandbox/cgroup_limits.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/launcher.h"
#include "sandbox/sandbox_spec.h"

using Clock = std::chrono::steady_clock;

namespace {

int fail(const std::string& what) {
  std::printf("error: %s\n", what.c_str());
  std::fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool hold_desk_cgroup = false;
  std::size_t memory_mb = 0;
  for (int index = 1; index < argc; ++index) {
    const std::string_view argument = argv[index];
    if (argument == "--desk-cgroup-held") {
      hold_desk_cgroup = true;
    } else if (argument == "--memory-mb" && index + 1 < argc) {
      char* end = nullptr;
      memory_mb = std::strtoul(argv[++index], &end, 10);
      if (end == argv[index] || *end != '\0' || memory_mb > 65536) {
        std::fprintf(stderr, "resident_launch_bench: --memory-mb takes a number of MB up to 65536\n");
        return 2;
      }
    } else if (argument == "-h" || argument == "--help") {
      std::puts("usage: resident_launch_bench [--desk-cgroup-held] [--memory-mb MB]  (then one line \"launch\" per sample "
                "on stdin)");
      return 0;
    } else {
      std::fprintf(stderr, "resident_launch_bench: unknown argument %s\n", argv[index]);
      return 2;
    }
  }
  std::optional<deskd::bench::TemporaryDesk> desk;
  try {
    desk.emplace();
  } catch (const std::exception& failure) {
    return fail(std::string("making the desk folder: ") + failure.what());
  }
  auto spec = deskd::sandbox::build_desk_sandbox_spec(desk->desk(), {}, deskd::sandbox::SandboxSettings{});
  if (!spec.ok()) return fail("the desk's sandbox: " + spec.error().what);
  deskd::UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd) return fail(std::string("/dev/null: ") + std::strerror(errno));
  const deskd::sandbox::StandardStreams streams{null_fd.get(), null_fd.get(), null_fd.get()};

  // The desk's cgroup, held as a running sandbox of the desk would hold it.
  std::shared_ptr<deskd::sandbox::DeskCgroup> held;
  if (hold_desk_cgroup) {
    auto acquired = spec->desk_cgroup->acquire(spec->limits);
    if (!acquired.ok()) return fail("the desk's cgroup: " + acquired.error().what);
    held = *acquired;
  }

  // Written, so that its pages exist and a fork would have to copy their tables.
  std::vector<char> held_memory(memory_mb << 20, 1);

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line != "launch") return fail("unknown request '" + line + "' (only \"launch\")");
    const auto began = Clock::now();
    {
      auto starting = deskd::sandbox::start_sandboxed(*spec, {"true"}, streams);
      if (!starting.ok()) return fail(starting.error().what);
      auto process = std::move(*starting).finish();
      if (!process.ok()) return fail(process.error().what);
      auto status = process->wait();
      if (!status.ok()) return fail(status.error().what);
      if (*status != 0) return fail("true exited with status " + std::to_string(*status));
    }  // the process and its sandbox cgroup are gone here, as after deskd sandbox's exit
    const double milliseconds = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
    std::printf("%.4f\n", milliseconds);
    std::fflush(stdout);
  }
  return 0;
}
