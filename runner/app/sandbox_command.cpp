#include "runner/app/sandbox_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "policy/confinement.h"
#include "runner/app/cli_values.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/launcher.h"
#include "sandbox/seccomp_profile.h"

namespace deskd::app {

const char* const kSandboxUsage =
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
    "                      root, handed to the sandbox's uid)\n"
    "  --hide PATH         hide a file or folder from the sandbox (repeatable)\n"
    "  --net none|host     no network but loopback (default), or the host's network\n"
    "  --memory SIZE       memory limit, e.g. 512M (address space without cgroups)\n"
    "  --pids N            process limit (default 1024)\n"
    "  --file-size SIZE    largest file the sandbox may write (default 4G)\n"
    "  --open-files N      open file limit (default 1024)\n"
    "  --uid N --gid N     host ids of the sandbox when deskd runs as root (default 65534)\n"
    "  --hostname NAME     hostname inside (default deskd)\n"
    "  --env NAME          copy the variable NAME from deskd's environment (repeatable)\n"
    "  --print-seccomp     print the seccomp profile and exit\n"
    "\n"
    "Exit status: the command's (128+N if killed by signal N); 125 if the sandbox cannot be\n"
    "set up; 126 if CMD cannot be executed; 127 if CMD is not found; 2 for bad usage.\n";

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

int run_sandbox_command(std::span<const std::string_view> arguments) {
  std::optional<std::filesystem::path> desk_directory;
  std::vector<std::filesystem::path> hidden_paths;
  std::vector<std::string> command;
  std::vector<std::string> variables;
  std::optional<sandbox::NetworkMode> network;
  std::optional<std::uint64_t> memory, pids, file_size, open_files, uid, gid;
  std::optional<std::string> hostname;

  for (std::size_t index = 0; index < arguments.size(); ++index) {
    const std::string_view argument = arguments[index];
    if (argument == "--") {
      command.assign(arguments.begin() + static_cast<std::ptrdiff_t>(index) + 1, arguments.end());
      break;
    }
    if (argument == "--help" || argument == "-h") {
      std::fputs(kSandboxUsage, stdout);
      return 0;
    }
    if (argument == "--print-seccomp") {
      std::fputs(sandbox::describe_seccomp_profile().c_str(), stdout);
      return 0;
    }
    if (!argument.starts_with("--")) {
      command.assign(arguments.begin() + static_cast<std::ptrdiff_t>(index), arguments.end());
      break;
    }
    if (index + 1 >= arguments.size()) return usage_error(std::string(argument) + " needs a value.");
    const std::string_view value = arguments[++index];
    const auto parsed_size = [&](std::optional<std::uint64_t>& into, bool size) {
      into = size ? parse_byte_size(value) : parse_count(value);
      return into.has_value();
    };
    if (argument == "--desk") desk_directory = std::filesystem::path(std::string(value));
    else if (argument == "--hide") hidden_paths.emplace_back(std::filesystem::absolute(std::string(value)));
    else if (argument == "--env") variables.emplace_back(value);
    else if (argument == "--hostname") hostname = std::string(value);
    else if (argument == "--net") {
      if (value == "none") network = sandbox::NetworkMode::none;
      else if (value == "host") network = sandbox::NetworkMode::host;
      else return usage_error("--net must be none or host, not '" + std::string(value) + "'.");
    } else if (argument == "--memory" || argument == "--file-size") {
      if (!parsed_size(argument == "--memory" ? memory : file_size, true)) {
        return usage_error(std::string(argument) + " needs a size such as 512M, not '" + std::string(value) + "'.");
      }
    } else if (argument == "--pids" || argument == "--open-files" || argument == "--uid" || argument == "--gid") {
      auto& into = argument == "--pids" ? pids : argument == "--open-files" ? open_files : argument == "--uid" ? uid : gid;
      if (!parsed_size(into, false)) {
        return usage_error(std::string(argument) + " needs a number, not '" + std::string(value) + "'.");
      }
    } else {
      return usage_error("unknown option " + std::string(argument) + ".");
    }
  }
  if (command.empty()) return usage_error("no command given; put it after --.");

  std::error_code error;
  const auto desk = desk_directory.value_or(std::filesystem::current_path(error));
  auto confinement = policy::Confinement::create(desk, hidden_paths);
  if (!confinement.ok()) return setup_error(confinement.error().what);
  sandbox::SandboxSpecBuilder builder(*confinement);
  if (network) builder.network(*network);
  if (memory) builder.memory_limit(*memory);
  if (pids) builder.process_limit(*pids);
  if (file_size) builder.file_size_limit(*file_size);
  if (open_files) builder.open_files_limit(*open_files);
  if (uid || gid) builder.run_as(static_cast<uid_t>(uid.value_or(65534)), static_cast<gid_t>(gid.value_or(65534)));
  if (hostname) builder.hostname(*hostname);
  for (const auto& name : variables) builder.allow_environment_variable(name);
  auto spec = builder.build();
  if (!spec.ok()) return setup_error(spec.error().what);
  if (desk_directory) {
    auto prepared = sandbox::prepare_desk_for_sandbox(*spec);
    if (!prepared.ok()) return setup_error(prepared.error().what);
  }

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
