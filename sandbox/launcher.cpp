#include "sandbox/launcher.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "sandbox/child_process.h"
#include "sandbox/init/init_protocol.h"
#include "sandbox/init_image.h"
#include "sandbox/init_spec.h"
#include "sandbox/memory_pinning_filter.h"
#include "sandbox/memory_sharing_clone.h"
#include "sandbox/supplementary_groups.h"

namespace deskd::sandbox {
namespace {

// Every sandbox uses the same program, compiled when deskd was built.
const SeccompProgram& shared_seccomp_program() {
  static const SeccompProgram program = SeccompProgram::precompiled();
  return program;
}

// The same program with its refusals sent to a listener, for desks whose refusals deskd
// reports (seccomp_notification.h).
const SeccompProgram& shared_reporting_program() {
  static const SeccompProgram program = shared_seccomp_program().with_refusals_notified();
  return program;
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
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Error::from_errno(errno, std::string("Creating the ") + purpose + " pipe failed");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
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

// One launch's state, in start()'s frame: what the child reads (all of it, in place, when it
// shares deskd's memory) and the descriptors that go to it. Filled step by step and never
// moved, since the child's context points into it. Members in the order start() makes
// them, so that an early return closes them in the reverse.
struct Launch {
  Launch() = default;
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  std::optional<SandboxCgroup> cgroup;
  std::vector<MountStep> mount_steps;
  std::vector<UniqueFd> opened_trees;
  LandlockPlan landlock;
  EgressPlan egress;
  UniqueFd init_spec;
  ChildContext context;
  std::vector<std::string> cgroup_procs;
  /// cgroup v1: the child joins its cgroup itself (joins_v1_cgroup), through these files.
  std::vector<std::string> cgroup_join_paths;
  std::vector<UniqueFd> cgroup_join_files;
  bool joins_v1_cgroup = false;
  Pipe sync;
  Pipe failures;
  /// The seccomp listener's way to deskd (listener_handover.h), and the child's end of it.
  ListenerHandover handover;
  UniqueFd refusal_channel_child;
  /// A v2 cgroup the clone could not start the child in: start() moves it there.
  bool place_after_clone = false;
};

// A child sharing deskd's memory runs on a stack of its own with every signal blocked;
// both stay until its set-up is over.
struct SharedMemoryChild {
  std::optional<ChildStack> stack;
  std::optional<SignalsBlocked> signals_blocked;
};

// Every launch (bash, the file opener, `deskd sandbox`) passes here: an unprivileged
// deskd's supplementary groups would go with the desk. A setup refusal (exit 125), not
// the command's (126).
Result<void> refuse_kept_groups(const SandboxSpec& spec) {
  if (auto groups = check_supplementary_groups(spec.allow_supplementary_groups); !groups.ok()) {
    return Error::make(ErrorCode::unsupported, "The sandbox could not be set up: " + groups.error().what);
  }
  return success();
}

Result<void> make_cgroup(const SandboxSpec& spec, Launch& launch) {
  if (!spec.desk_cgroup) {
    return Error::make(ErrorCode::internal, "The sandbox could not be set up: its spec names no desk cgroup slot.");
  }
  DESKD_ASSIGN_OR_RETURN(launch.cgroup, create_sandbox_cgroup(*spec.desk_cgroup, spec.limits));
  if (!launch.cgroup && spec.limits.cpus) {
    return Error::make(ErrorCode::unsupported,
                       "The sandbox could not be set up: a CPU limit needs a cgroup (a delegated cgroup v2 "
                       "subtree, or cgroup v1 under a root deskd), and this host gives deskd none (see deskd doctor).");
  }
  return success();
}

Result<void> plan_filesystem(const SandboxSpec& spec, Launch& launch) {
  // Without a cgroup nothing counts tmpfs pages against the desk's memory: /tmp and
  // /dev/shm (each of tmp_size_bytes) together get at most the memory limit.
  std::optional<SandboxSpec> capped;
  if (!launch.cgroup && spec.limits.memory_bytes && spec.limits.tmp_size_bytes > *spec.limits.memory_bytes / 2) {
    capped = spec;
    capped->limits.tmp_size_bytes = *spec.limits.memory_bytes / 2;
  }
  launch.mount_steps = plan_mounts(capped ? *capped : spec);
  DESKD_ASSIGN_OR_RETURN(launch.opened_trees, open_trees_for_binds(launch.mount_steps));
  launch.landlock = plan_landlock(spec, kernel_landlock_abi());
  return success();
}

// network = "allowlist": the relay to deskd's egress proxy goes to the init as the last of
// the command's descriptors; the init gives it to its forwarder, never to the command.
int relay_descriptor(const Launch& launch, const StandardStreams& streams) {
  return launch.egress.relay ? static_cast<int>(3 + streams.extra.size()) : -1;
}

Result<void> plan_init(const SandboxSpec& spec, std::uint32_t mode, const std::vector<std::string>& command,
                       const StandardStreams& streams, Launch& launch) {
  const auto candidates =
      command.empty() ? std::vector<std::string>{} : executable_candidates(command.front(), spec.environment);
  DESKD_ASSIGN_OR_RETURN(launch.egress, plan_egress(spec, mode == DESKD_INIT_RUN));
  DESKD_ASSIGN_OR_RETURN(launch.init_spec, write_init_spec(mode, candidates, command, spec.environment,
                                                           relay_descriptor(launch, streams), launch.egress.listeners));
  return success();
}

Result<void> fill_child_context(const SandboxSpec& spec, const StandardStreams& streams, int init_image,
                                Launch& launch) {
  ChildContext& context = launch.context;
  context.identity = plan_identity(::geteuid(), ::getegid(), spec.root_daemon_uid, spec.root_daemon_gid);
  context.last_capability = last_capability();
  context.mount_steps = &launch.mount_steps;
  context.landlock = &launch.landlock;
  context.seccomp = &shared_seccomp_program();
  if (!launch.cgroup) context.memory_pinning_filter = memory_pinning_filter();
  context.limits = plan_limits(spec.limits, launch.cgroup.has_value());
  context.hostname = spec.hostname.c_str();
  context.bring_up_loopback = spec.network != NetworkMode::host;
  context.unprivileged_port_start = launch.egress.unprivileged_port_start;
  context.init_image_fd = init_image;
  context.init_spec_fd = launch.init_spec.get();
  context.descriptors = {streams.input, streams.output, streams.error};
  for (int fd : streams.extra) {
    if (fd < 0) return Error::make(ErrorCode::invalid_argument, "An extra descriptor for the sandbox is invalid.");
    context.descriptors.push_back(fd);
  }
  if (launch.egress.relay) context.descriptors.push_back(launch.egress.relay.get());
  return success();
}

// cgroup v1 has no CLONE_INTO_CGROUP: the child joins its cgroup itself, through files
// opened here (the child cannot open them: its mounts and identity are not the host's).
// It writes "0" to each `tasks` file, not to `cgroup.procs`: the child is a process of one
// thread, so moving that thread moves all of it, and a thread that moves itself is the
// one move recent kernels make without write-locking cgroup_threadgroup_rwsem
// (cgroup_procs_write_start; older ones take the lock either way). Taking that lock waits
// for an RCU grace period unless another move just happened: 14 to 23 ms on the 6.18 build
// machine against 50 to 100 us through `tasks` (bench/README.md, cold start). The child's
// descendants inherit its cgroup.
Result<void> open_cgroup_joins(Launch& launch) {
  launch.joins_v1_cgroup = launch.cgroup && launch.cgroup->version() == SandboxCgroup::Version::one;
  launch.cgroup_procs = launch.cgroup ? launch.cgroup->procs_files() : std::vector<std::string>{};
  if (!launch.joins_v1_cgroup) return success();
  for (const auto& folder : launch.cgroup->folders()) launch.cgroup_join_paths.push_back(folder + "/tasks");
  for (const auto& tasks_file : launch.cgroup_join_paths) {
    UniqueFd tasks(::open(tasks_file.c_str(), O_WRONLY | O_CLOEXEC));
    if (!tasks) return Error::from_errno(errno, "The sandbox could not be set up: opening " + tasks_file + " failed");
    launch.context.cgroup_joins.push_back({tasks.get(), tasks_file.c_str()});
    launch.cgroup_join_files.push_back(std::move(tasks));
  }
  return success();
}

Result<void> make_pipes(Launch& launch) {
  DESKD_ASSIGN_OR_RETURN(launch.sync, make_pipe("synchronisation"));
  DESKD_ASSIGN_OR_RETURN(launch.failures, make_pipe("failure report"));
  launch.context.sync_fd = launch.sync.read_end.get();
  launch.context.failure_fd = launch.failures.write_end.get();
  return success();
}

Result<void> make_listener_channel(const SandboxSpec& spec, Launch& launch) {
  DESKD_ASSIGN_OR_RETURN(launch.handover, make_listener_handover(spec.refusals, launch.refusal_channel_child));
  if (launch.refusal_channel_child) {
    launch.context.refusal_channel_fd = launch.refusal_channel_child.get();
    launch.context.reporting_seccomp = &shared_reporting_program();
  }
  return success();
}

// A child sharing deskd's memory is ranked by a memory cgroup's OOM killer with deskd's
// whole memory map, and once it is chosen the kernel kills every process sharing that map:
// deskd. A desk that holds its cgroup at the limit (tmpfs pages, which no process's RSS
// shows) while a sandbox of it starts would have deskd killed. So the child shares deskd's
// memory only where nothing of a desk can fill the cgroup it joins meanwhile: no cgroup (it
// stays in deskd's own), or a cgroup of this one sandbox (`deskd sandbox`, a desk's trial).
// Elsewhere it is a fork, whose copy is its own to lose.
bool sharing_memory_is_safe(const SandboxSpec& spec, const Launch& launch) {
  const DeskCgroupSlot::Use use = spec.desk_cgroup->use();
  return !launch.cgroup || use == DeskCgroupSlot::Use::one_sandbox || use == DeskCgroupSlot::Use::alone;
}

// Makes the child, which starts at run_sandbox_child, and drops what it now holds for itself.
Result<SandboxedProcess> clone_sandbox(const SandboxSpec& spec, ChildMaking making, Launch& launch,
                                       SharedMemoryChild& shared) {
  unsigned long long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
  if (spec.network != NetworkMode::host) flags |= CLONE_NEWNET;
  int raw_pidfd = -1;
  const int cgroup_fd = launch.cgroup ? launch.cgroup->directory_fd() : -1;
  if (making == ChildMaking::sharing_memory && can_clone_sharing_memory() && sharing_memory_is_safe(spec, launch)) {
    DESKD_ASSIGN_OR_RETURN(ChildStack mapped, ChildStack::map());
    shared.stack.emplace(std::move(mapped));
    shared.signals_blocked.emplace();
    launch.context.signal_mask = shared.signals_blocked->before();
  }
  pid_t pid = -1;
  if (shared.stack) {
    pid = clone_sharing_memory(flags, &raw_pidfd, cgroup_fd, *shared.stack, run_child, &launch.context);
    // No clone3, or no CLONE_CLEAR_SIGHAND: fork as before. Whatever else EINVAL meant, the
    // fork's clone3 or clone reports it.
    if (pid < 0 && (errno == ENOSYS || errno == EINVAL)) shared.stack.reset();
  }
  if (!shared.stack) pid = clone_child(flags, &raw_pidfd, cgroup_fd);
  if (pid < 0) {
    return Error::from_errno(errno, "The sandbox could not be set up: creating its namespaces (clone) failed");
  }
  if (pid == 0) run_sandbox_child(launch.context);
  launch.init_spec.reset();
  launch.egress.relay.reset();       // the sandbox's init holds it now
  launch.cgroup_join_files.clear();  // the child holds its own copies
  launch.refusal_channel_child.reset();
  // A v2 cgroup without clone3 (kernels before 5.7 lack CLONE_INTO_CGROUP): placed by
  // start(), before the child is woken up.
  launch.place_after_clone = launch.cgroup && !launch.joins_v1_cgroup && (raw_pidfd < 0 || cgroup_fd < 0);
  SandboxedProcess process(pid, UniqueFd(raw_pidfd), std::move(launch.cgroup));
  // Before the child is woken: its domain's first refusal names it as the creator.
  if (spec.refusals) spec.refusals->watch_landlock_domain(pid);
  launch.sync.read_end.reset();
  launch.failures.write_end.reset();
  return process;
}

Result<void> place_in_cgroup(const Launch& launch, SandboxedProcess& process) {
  if (!launch.place_after_clone) return success();
  const std::string text = std::to_string(process.pid());
  for (const auto& procs_file : launch.cgroup_procs) {
    UniqueFd procs(::open(procs_file.c_str(), O_WRONLY | O_CLOEXEC));
    if (!procs || ::write(procs.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      const int error_number = errno;
      process.close();
      return Error::from_errno(error_number,
                               "The sandbox could not be set up: moving it into " + procs_file + " failed");
    }
  }
  return success();
}

// The child waits on the sync pipe until its id maps are written.
Result<void> wake_child(Launch& launch, SandboxedProcess& process) {
  auto mapped = write_identity_maps(process.pid(), launch.context.identity);
  if (!mapped.ok()) {
    process.close();
    return Error{mapped.error().code, mapped.error().error_number,
                 "The sandbox could not be set up: " + mapped.error().what};
  }
  const char go = 1;
  if (retry_on_eintr([&] { return ::write(launch.sync.write_end.get(), &go, 1); }) != 1) {
    process.close();
    return Error::from_errno(errno, "The sandbox could not be set up: waking the child failed");
  }
  launch.sync.write_end.reset();
  return success();
}

Result<StartingSandbox> start(const SandboxSpec& spec, std::uint32_t mode, const std::vector<std::string>& command,
                              const StandardStreams& streams, ChildMaking making = ChildMaking::forking) {
  const auto began = std::chrono::steady_clock::now();
  DESKD_RETURN_IF_ERROR(refuse_kept_groups(spec));
  DESKD_ASSIGN_OR_RETURN(const int init_image, init_image_descriptor());
  Launch launch;
  DESKD_RETURN_IF_ERROR(make_cgroup(spec, launch));
  DESKD_RETURN_IF_ERROR(plan_filesystem(spec, launch));
  DESKD_RETURN_IF_ERROR(plan_init(spec, mode, command, streams, launch));
  DESKD_RETURN_IF_ERROR(fill_child_context(spec, streams, init_image, launch));
  DESKD_RETURN_IF_ERROR(open_cgroup_joins(launch));
  DESKD_RETURN_IF_ERROR(make_pipes(launch));
  DESKD_RETURN_IF_ERROR(make_listener_channel(spec, launch));
  // Declared before the process, so that they go after it: dropping the process kills and
  // reaps the child, which may be running on this stack, in this memory.
  SharedMemoryChild shared;
  DESKD_ASSIGN_OR_RETURN(SandboxedProcess process, clone_sandbox(spec, making, launch, shared));
  DESKD_RETURN_IF_ERROR(place_in_cgroup(launch, process));
  DESKD_RETURN_IF_ERROR(wake_child(launch, process));
  StartingSandbox starting(std::move(process), std::move(launch.failures.read_end), std::move(launch.handover));
  starting.tell_start_to(spec.started, began);
  if (!shared.stack) return starting;
  // The child reads `launch` until it has executed: the set-up ends here.
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
