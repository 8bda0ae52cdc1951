#include "sandbox/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "sandbox/child_failure.h"
#include "sandbox/child_process.h"
#include "sandbox/container_fix.h"
#include "sandbox/init/init_protocol.h"
#include "sandbox/init_image.h"
#include "sandbox/supplementary_groups.h"
#include "sandbox/memory_pinning_filter.h"
#include "sandbox/memory_sharing_clone.h"

namespace deskd::sandbox {
namespace {

// Every sandbox uses the same program, compiled when deskd was built.
const SeccompProgram& shared_seccomp_program() {
  static const SeccompProgram program = SeccompProgram::precompiled();
  return program;
}

std::vector<std::string> executable_candidates(const std::string& name,
                                               const std::vector<std::string>& environment) {
  if (name.find('/') != std::string::npos) return {name};
  std::string search_path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& entry : environment) {
    if (entry.rfind("PATH=", 0) == 0) search_path = entry.substr(5);
  }
  std::vector<std::string> candidates;
  std::size_t start = 0;
  while (start <= search_path.size()) {
    const std::size_t colon = std::min(search_path.find(':', start), search_path.size());
    const std::string folder = search_path.substr(start, colon - start);
    candidates.push_back((folder.empty() ? std::string(".") : folder) + "/" + name);
    start = colon + 1;
  }
  return candidates;
}

// With a cgroup, processes and memory are limited for the desk as a whole (all its sandboxes); the rlimits
// would count per host uid (RLIMIT_NPROC) or per process (RLIMIT_AS) instead.
std::vector<ResourceLimit> plan_limits(const ResourceLimits& limits, bool has_cgroup) {
  const auto both = [](std::uint64_t value) { return rlimit{value, value}; };
  std::vector<ResourceLimit> planned = {
      {RLIMIT_NOFILE, both(limits.open_files)},
      {RLIMIT_FSIZE, both(limits.file_size_bytes)},
      {RLIMIT_CORE, both(0)},
  };
  if (!has_cgroup) planned.push_back({RLIMIT_NPROC, both(limits.processes)});
  if (!has_cgroup && limits.memory_bytes) planned.push_back({RLIMIT_AS, both(*limits.memory_bytes)});
  return planned;
}

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

Result<Pipe> make_pipe(const char* purpose) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno(errno, std::string("Creating the ") + purpose + " pipe failed");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::string host_path(const char* path) {
  const std::size_t prefix = std::strlen(kNewRoot);
  if (std::strncmp(path, kNewRoot, prefix) == 0 && path[prefix] == '/') return path + prefix;
  return path;
}

// What deskd-init is to do, in a memfd of its own (argv and the environment can be larger
// than a pipe holds): the header, then every string with its NUL.
Result<UniqueFd> write_init_spec(std::uint32_t mode, const std::vector<std::string>& candidates,
                                 const std::vector<std::string>& arguments,
                                 const std::vector<std::string>& environment, int egress_relay_index,
                                 const std::vector<deskd_egress_listener>& listeners) {
  std::string strings;
  for (const auto* list : {&candidates, &arguments, &environment}) {
    for (const auto& text : *list) {
      if (text.find('\0') != std::string::npos) {
        return Error::make(ErrorCode::invalid_argument, "An argument or variable for the sandbox holds a NUL byte.");
      }
      strings.append(text).push_back('\0');
    }
  }
  if (strings.size() > DESKD_INIT_MAX_SPEC_BYTES) {
    return Error::make(ErrorCode::invalid_argument, "The command's arguments and environment exceed 4 MiB.");
  }
  if (listeners.size() > DESKD_EGRESS_MAX_LISTENERS) {
    return Error::make(ErrorCode::invalid_argument, "The desk's allowed names need too many listeners.");
  }
  deskd_init_header header{DESKD_INIT_MAGIC,
                           mode,
                           static_cast<std::uint32_t>(candidates.size()),
                           static_cast<std::uint32_t>(arguments.size()),
                           static_cast<std::uint32_t>(environment.size()),
                           static_cast<std::uint32_t>(strings.size()),
                           egress_relay_index,
                           egress_relay_index >= 0 ? kEgressProxyPort : 0U,
                           static_cast<std::uint32_t>(listeners.size())};
  UniqueFd spec(::memfd_create("deskd-init-spec", MFD_CLOEXEC));
  if (!spec) return Error::from_errno(errno, "Creating the memfd for deskd-init's spec failed");
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes += strings;
  bytes.append(reinterpret_cast<const char*>(listeners.data()), listeners.size() * sizeof(deskd_egress_listener));
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const ssize_t written = retry_on_eintr([&] { return ::write(spec.get(), rest.data(), rest.size()); });
    if (written <= 0) return Error::from_errno(errno, "Writing deskd-init's spec failed");
    rest.remove_prefix(static_cast<std::size_t>(written));
  }
  return spec;
}

Error launch_error(const ChildFailure& failure) {
  const std::string path = host_path(failure.path);
  if (failure.exit_status == kNotFoundStatus) {
    return Error{ErrorCode::not_found, failure.error_number, path + ": command not found in the sandbox."};
  }
  if (failure.exit_status == kNotExecutableStatus) {
    Error error = Error::from_errno(failure.error_number, path + " cannot be executed in the sandbox");
    error.code = ErrorCode::refused;
    return error;
  }
  std::string what = "The sandbox could not be set up: " + std::string(failure.step);
  if (!path.empty()) what += " (" + path + ")";
  Error error = Error::from_errno(failure.error_number, what + " failed");
  error.what += container_fix_for(failure.step);
  return error;
}

// clone3 gives a pidfd atomically with the child; clone is the fallback on kernels before 5.3.
pid_t clone_child(unsigned long long flags, int* pidfd, int cgroup_fd) {
  clone_args arguments{};
  arguments.flags = flags | CLONE_PIDFD | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0);
  if (cgroup_fd >= 0) arguments.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  arguments.pidfd = reinterpret_cast<std::uint64_t>(pidfd);
  arguments.exit_signal = SIGCHLD;
  const long pid = ::syscall(SYS_clone3, &arguments, sizeof arguments);
  if (pid >= 0 || errno != ENOSYS) return static_cast<pid_t>(pid);
  *pidfd = -1;
  return static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0));
}

}  // namespace

int exit_status_for_launch_error(const Error& error) {
  if (error.code == ErrorCode::not_found) return kNotFoundStatus;
  if (error.code == ErrorCode::refused) return kNotExecutableStatus;
  return kSetupFailedStatus;
}

namespace {

// Every signal blocked in the calling thread while a child shares its memory: a handler run
// in the child would write deskd's memory, and a read of the report pipe interrupted in the
// parent would look at an errno the child may have set. The child restores the old mask
// just before it executes deskd-init.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &before_);
  }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  const sigset_t* before() const { return &before_; }

 private:
  sigset_t before_;
};

void run_child(void* context) { run_sandbox_child(*static_cast<const ChildContext*>(context)); }

// How start() makes the child: `forking` copies deskd (the child may outlive start(), as an
// event loop's start_sandboxed needs); `sharing_memory` copies nothing, so start() waits for
// the set-up to end before anything the child reads goes (memory_sharing_clone.h).
enum class ChildMaking { forking, sharing_memory };

Result<StartingSandbox> start(const SandboxSpec& spec, std::uint32_t mode, const std::vector<std::string>& command,
                              const StandardStreams& streams, ChildMaking making = ChildMaking::forking) {
  // Every launch (bash, the file opener, `deskd sandbox`) passes here: an unprivileged
  // deskd's supplementary groups would go with the desk. A setup refusal (exit 125), not
  // the command's (126).
  if (auto groups = check_supplementary_groups(spec.allow_supplementary_groups); !groups.ok()) {
    return Error::make(ErrorCode::unsupported, "The sandbox could not be set up: " + groups.error().what);
  }
  const SeccompProgram* seccomp = &shared_seccomp_program();
  DESKD_ASSIGN_OR_RETURN(const int init_image, init_image_descriptor());
  if (!spec.desk_cgroup) {
    return Error::make(ErrorCode::internal, "The sandbox could not be set up: its spec names no desk cgroup slot.");
  }
  DESKD_ASSIGN_OR_RETURN(std::optional<SandboxCgroup> cgroup, create_sandbox_cgroup(*spec.desk_cgroup, spec.limits));
  if (!cgroup && spec.limits.cpus) {
    return Error::make(ErrorCode::unsupported,
                       "The sandbox could not be set up: a CPU limit needs a cgroup (a delegated cgroup v2 "
                       "subtree, or cgroup v1 under a root deskd), and this host gives deskd none (see deskd doctor).");
  }
  // Without a cgroup nothing counts tmpfs pages against the desk's memory: /tmp and
  // /dev/shm (each of tmp_size_bytes) together get at most the memory limit.
  std::optional<SandboxSpec> capped;
  if (!cgroup && spec.limits.memory_bytes && spec.limits.tmp_size_bytes > *spec.limits.memory_bytes / 2) {
    capped = spec;
    capped->limits.tmp_size_bytes = *spec.limits.memory_bytes / 2;
  }
  auto mount_steps = plan_mounts(capped ? *capped : spec);
  DESKD_ASSIGN_OR_RETURN(const std::vector<UniqueFd> opened_trees, open_trees_for_binds(mount_steps));
  const auto landlock = plan_landlock(spec, kernel_landlock_abi());
  const auto candidates = command.empty() ? std::vector<std::string>{}
                                          : executable_candidates(command.front(), spec.environment);
  // network = "allowlist": the relay to deskd's egress proxy goes to the init as the last of
  // the command's descriptors; the init gives it to its forwarder, never to the command.
  DESKD_ASSIGN_OR_RETURN(EgressPlan egress, plan_egress(spec, mode == DESKD_INIT_RUN));
  const int egress_relay_index = egress.relay ? static_cast<int>(3 + streams.extra.size()) : -1;
  DESKD_ASSIGN_OR_RETURN(UniqueFd init_spec,
                         write_init_spec(mode, candidates, command, spec.environment, egress_relay_index,
                                         egress.listeners));

  ChildContext context;
  context.identity = plan_identity(::geteuid(), ::getegid(), spec.root_daemon_uid, spec.root_daemon_gid);
  context.last_capability = last_capability();
  context.mount_steps = &mount_steps;
  context.landlock = &landlock;
  context.seccomp = seccomp;
  if (!cgroup) context.memory_pinning_filter = memory_pinning_filter();
  context.limits = plan_limits(spec.limits, cgroup.has_value());
  context.hostname = spec.hostname.c_str();
  context.bring_up_loopback = spec.network != NetworkMode::host;
  context.unprivileged_port_start = egress.unprivileged_port_start;
  context.init_image_fd = init_image;
  context.init_spec_fd = init_spec.get();
  context.descriptors = {streams.input, streams.output, streams.error};
  for (int fd : streams.extra) {
    if (fd < 0) return Error::make(ErrorCode::invalid_argument, "An extra descriptor for the sandbox is invalid.");
    context.descriptors.push_back(fd);
  }
  if (egress.relay) context.descriptors.push_back(egress.relay.get());

  // cgroup v1 has no CLONE_INTO_CGROUP: the child joins its cgroup itself, through files
  // opened here (the child cannot open them: its mounts and identity are not the host's).
  const bool joins_v1_cgroup = cgroup && cgroup->version() == SandboxCgroup::Version::one;
  const std::vector<std::string> cgroup_procs = cgroup ? cgroup->procs_files() : std::vector<std::string>{};
  std::vector<UniqueFd> cgroup_join_files;
  if (joins_v1_cgroup) {
    for (const auto& procs_file : cgroup_procs) {
      UniqueFd procs(::open(procs_file.c_str(), O_WRONLY | O_CLOEXEC));
      if (!procs) return Error::from_errno(errno, "The sandbox could not be set up: opening " + procs_file + " failed");
      context.cgroup_joins.push_back({procs.get(), procs_file.c_str()});
      cgroup_join_files.push_back(std::move(procs));
    }
  }
  DESKD_ASSIGN_OR_RETURN(Pipe sync, make_pipe("synchronisation"));
  DESKD_ASSIGN_OR_RETURN(Pipe failures, make_pipe("failure report"));
  context.sync_fd = sync.read_end.get();
  context.failure_fd = failures.write_end.get();

  unsigned long long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                             CLONE_NEWCGROUP;
  if (spec.network != NetworkMode::host) flags |= CLONE_NEWNET;
  int raw_pidfd = -1;
  const int cgroup_fd = cgroup ? cgroup->directory_fd() : -1;
  // Declared before the process, so that they go after it: dropping the process kills and
  // reaps the child, which may be running on this stack, in this memory.
  std::optional<ChildStack> child_stack;
  std::optional<SignalsBlocked> signals_blocked;
  if (making == ChildMaking::sharing_memory && can_clone_sharing_memory()) {
    DESKD_ASSIGN_OR_RETURN(ChildStack mapped, ChildStack::map());
    child_stack.emplace(std::move(mapped));
    signals_blocked.emplace();
    context.signal_mask = signals_blocked->before();
  }
  pid_t pid = -1;
  if (child_stack) {
    pid = clone_sharing_memory(flags, &raw_pidfd, cgroup_fd, *child_stack, run_child, &context);
    // No clone3, or no CLONE_CLEAR_SIGHAND: fork as before. Whatever else EINVAL meant, the
    // fork's clone3 or clone reports it.
    if (pid < 0 && (errno == ENOSYS || errno == EINVAL)) child_stack.reset();
  }
  if (!child_stack) pid = clone_child(flags, &raw_pidfd, cgroup_fd);
  if (pid < 0) {
    return Error::from_errno(errno, "The sandbox could not be set up: creating its namespaces (clone) failed");
  }
  if (pid == 0) run_sandbox_child(context);
  init_spec.reset();
  egress.relay.reset();  // the sandbox's init holds it now

  cgroup_join_files.clear();  // the child holds its own copies
  // A v2 cgroup without clone3 (kernels before 5.7 lack CLONE_INTO_CGROUP): placed here,
  // before the child is woken up.
  const bool place_here = cgroup && !joins_v1_cgroup && (raw_pidfd < 0 || cgroup_fd < 0);
  SandboxedProcess process(pid, UniqueFd(raw_pidfd), std::move(cgroup));
  sync.read_end.reset();
  failures.write_end.reset();
  if (place_here) {
    const std::string text = std::to_string(pid);
    for (const auto& procs_file : cgroup_procs) {
      UniqueFd procs(::open(procs_file.c_str(), O_WRONLY | O_CLOEXEC));
      if (!procs || ::write(procs.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        const int error_number = errno;
        process.close();
        return Error::from_errno(error_number, "The sandbox could not be set up: moving it into " + procs_file + " failed");
      }
    }
  }
  auto mapped = write_identity_maps(pid, context.identity);
  if (!mapped.ok()) {
    process.close();
    return Error{mapped.error().code, mapped.error().error_number,
                 "The sandbox could not be set up: " + mapped.error().what};
  }
  const char go = 1;
  if (retry_on_eintr([&] { return ::write(sync.write_end.get(), &go, 1); }) != 1) {
    process.close();
    return Error::from_errno(errno, "The sandbox could not be set up: waking the child failed");
  }
  sync.write_end.reset();
  StartingSandbox starting(std::move(process), std::move(failures.read_end));
  if (!child_stack) return starting;
  // The child reads this frame until it has executed: the set-up ends here.
  DESKD_ASSIGN_OR_RETURN(SandboxedProcess running, std::move(starting).finish());
  return StartingSandbox(std::move(running), UniqueFd());
}

Result<SandboxedProcess> launch(const SandboxSpec& spec, std::uint32_t mode, const std::vector<std::string>& command,
                                const StandardStreams& streams) {
  DESKD_ASSIGN_OR_RETURN(StartingSandbox starting, start(spec, mode, command, streams, ChildMaking::sharing_memory));
  return std::move(starting).finish();
}

Result<void> check_command(const std::vector<std::string>& command) {
  if (command.empty() || command.front().empty()) {
    return Error::make(ErrorCode::invalid_argument, "No command was given to run in the sandbox.");
  }
  return success();
}

}  // namespace

bool StartingSandbox::set_up_over() const {
  if (!report_) return true;
  pollfd report{report_.get(), POLLIN, 0};
  return retry_on_eintr([&] { return ::poll(&report, 1, 0); }) != 0;
}

Result<SandboxedProcess> StartingSandbox::finish() && {
  if (!report_) return std::move(process_);  // set up already (a child that shared deskd's memory)
  // The pipe closes without a record once the command has been executed. It may have been
  // made non-blocking by an event loop that waited on it (O_NONBLOCK belongs to the open
  // pipe, which a dup shares): a read that would block waits here, and only end of file
  // means success, never an error.
  ChildFailure failure;
  std::size_t received = 0;
  while (received < sizeof failure) {
    const ssize_t count = retry_on_eintr([&] {
      return ::read(report_.get(), reinterpret_cast<char*>(&failure) + received, sizeof failure - received);
    });
    if (count == 0) break;
    if (count < 0 && errno == EAGAIN) {
      pollfd report{report_.get(), POLLIN, 0};
      (void)retry_on_eintr([&] { return ::poll(&report, 1, -1); });
      continue;
    }
    if (count < 0) {
      const int error_number = errno;
      process_.close();
      return Error::from_errno(error_number, "The sandbox could not be set up: reading its child's report failed");
    }
    received += static_cast<std::size_t>(count);
  }
  report_.reset();
  if (received == 0) return std::move(process_);
  process_.close();
  if (received < sizeof failure) {
    return Error::make(ErrorCode::internal, "The sandbox could not be set up: its child sent a truncated report.");
  }
  return launch_error(failure);
}

Result<StartingSandbox> start_sandboxed(const SandboxSpec& spec, const std::vector<std::string>& command,
                                        const StandardStreams& streams) {
  DESKD_RETURN_IF_ERROR(check_command(command));
  return start(spec, DESKD_INIT_RUN, command, streams);
}

Result<SandboxedProcess> launch_sandboxed(const SandboxSpec& spec, const std::vector<std::string>& command,
                                          const StandardStreams& streams) {
  DESKD_RETURN_IF_ERROR(check_command(command));
  return launch(spec, DESKD_INIT_RUN, command, streams);
}

Result<SandboxedProcess> launch_file_opener(const SandboxSpec& spec, int socket_fd) {
  UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd) return Error::from_errno(errno, "Opening /dev/null for the file opener failed");
  return launch(spec, DESKD_INIT_FILES, {}, StandardStreams{socket_fd, null_fd.get(), null_fd.get()});
}

}  // namespace deskd::sandbox
