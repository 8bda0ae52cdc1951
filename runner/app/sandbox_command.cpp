#include "runner/app/sandbox_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "runner/app/sandbox_options.h"
#include "sandbox/launcher.h"

namespace deskd::app {

namespace {

const char* const kUsageHead =
    "usage: deskd sandbox [OPTIONS] -- CMD [ARG]...\n"
    "       deskd sandbox --print-seccomp\n"
    "\n"
    "Runs CMD once in a desk's sandbox: its own user, mount, pid, network, ipc, uts and\n"
    "cgroup namespaces; the host read-only; hidden paths masked; the desk's Memory.md,\n"
    "memory/, notes/ and scratch/ writable; seccomp, landlock, no capabilities, rlimits;\n"
    "a clean environment. Standard input and output are the caller's.\n"
    "\n"
    "  --desk DIR          the desk folder (default: the current folder; when given, its\n"
    "                      missing writable places are created and, when deskd runs as\n"
    "                      root, handed to the sandbox's uid)\n";

const char* const kUsageTail =
    "  --print-seccomp     print the seccomp profile and exit\n"
    "\n"
    "Exit status: the command's (128+N if killed by signal N); 125 if the sandbox cannot be\n"
    "set up; 126 if CMD cannot be executed; 127 if CMD is not found; 2 for bad usage.\n";

}  // namespace

std::string sandbox_usage() { return std::string(kUsageHead) + sandbox_options_help() + kUsageTail; }

namespace {

int usage_error(const std::string& message) {
  std::fprintf(stderr, "deskd sandbox: %s\nRun 'deskd sandbox --help' for usage.\n", message.c_str());
  return 2;
}

int setup_error(const std::string& message) {
  std::fprintf(stderr, "deskd sandbox: %s\n", message.c_str());
  return sandbox::kSetupFailedStatus;
}

// Waits for the sandbox, passing on the signals a person or a supervisor sends to deskd.
int supervise(sandbox::SandboxedProcess& process, int signal_fd) {
  for (;;) {
    pollfd descriptors[2] = {{process.pidfd(), POLLIN, 0}, {signal_fd, POLLIN, 0}};
    const int ready = ::poll(descriptors, 2, process.pidfd() >= 0 ? -1 : 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0 && (descriptors[1].revents & POLLIN) != 0) {
      signalfd_siginfo information{};
      if (::read(signal_fd, &information, sizeof information) == sizeof information) {
        (void)process.signal(static_cast<int>(information.ssi_signo));
      }
    }
    auto status = process.wait_for(std::chrono::milliseconds(0));
    if (!status.ok()) return setup_error(status.error().what);
    if (*status) return **status;
  }
  auto status = process.wait();
  return status.ok() ? *status : setup_error(status.error().what);
}

}  // namespace

bool sandbox_asks_for_seccomp_text(std::span<const std::string_view> arguments) {
  for (const std::string_view argument : arguments) {
    if (argument == "--") return false;
    if (argument == "--print-seccomp") return true;
  }
  return false;
}

int run_sandbox_command(std::span<const std::string_view> arguments, std::string (*describe_seccomp)()) {
  SandboxOptions options;
  std::vector<std::string> command;

  for (std::size_t index = 0; index < arguments.size(); ++index) {
    const std::string_view argument = arguments[index];
    if (argument == "--") {
      command.assign(arguments.begin() + static_cast<std::ptrdiff_t>(index) + 1, arguments.end());
      break;
    }
    if (argument == "--help" || argument == "-h") {
      std::fputs(sandbox_usage().c_str(), stdout);
      return 0;
    }
    if (argument == "--print-seccomp") {
      if (describe_seccomp == nullptr) return setup_error("--print-seccomp is deskd-full's; run it through deskd.");
      std::fputs(describe_seccomp().c_str(), stdout);
      return 0;
    }
    if (!argument.starts_with("--")) {
      command.assign(arguments.begin() + static_cast<std::ptrdiff_t>(index), arguments.end());
      break;
    }
    auto taken = take_sandbox_option(arguments, index, options);
    if (!taken.ok()) return usage_error(taken.error().what);
    if (!*taken) return usage_error("unknown option " + std::string(argument) + ".");
  }
  if (command.empty()) return usage_error("no command given; put it after --.");
  if (auto checked = check_sandbox_options(options); !checked.ok()) return usage_error(checked.error().what);

  auto spec = build_sandbox_spec(options);
  if (!spec.ok()) return setup_error(spec.error().what);
  // This process runs one sandbox: its cgroup is the desk's (one folder per hierarchy).
  spec->desk_cgroup = std::make_shared<sandbox::DeskCgroupSlot>(sandbox::DeskCgroupSlot::Use::one_sandbox);

  // Signals wait in a signalfd from before the launch, so none is lost in between.
  sigset_t forwarded;
  ::sigemptyset(&forwarded);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaddset(&forwarded, signal_number);
  ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
  const int signal_fd = ::signalfd(-1, &forwarded, SFD_CLOEXEC);

  auto process = sandbox::launch_sandboxed(*spec, command);
  if (!process.ok()) {
    std::fprintf(stderr, "deskd sandbox: %s\n", process.error().what.c_str());
    return sandbox::exit_status_for_launch_error(process.error());
  }
  const int status = supervise(*process, signal_fd);
  if (signal_fd >= 0) ::close(signal_fd);
  return status;
}

}  // namespace deskd::app
