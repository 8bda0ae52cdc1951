#include "sandbox/background_start.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "base/unique_fd.h"
#include "sandbox/launcher.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

struct BackgroundStart::Job {
  Job(const SandboxSpec& spec_to_copy, const std::vector<std::string>& command_to_copy)
      : spec(spec_to_copy), command(command_to_copy) {}

  // What the launch thread reads; no one else touches them once queued.
  SandboxSpec spec;
  std::vector<std::string> command;
  UniqueFd input, output, error;
  std::vector<UniqueFd> extra;
  UniqueFd done_write;
  UniqueFd done_read;  // the caller's

  // Under mutex, told through changed.
  std::mutex mutex;
  std::condition_variable changed;
  bool taken_by_thread = false;
  bool cancelled = false;
  bool cloned = false;
  bool over = false;
  pid_t pid = -1;
  UniqueFd pidfd;  // a copy: the child can be killed by it without racing its reaping
  std::optional<Result<StartingSandbox>> result;
};

namespace {

using Job = BackgroundStart::Job;

// More than one, so that a launch stuck before its clone (a host path that hangs) does not
// hold the others; few, since each runs a launch at a time and the host has few CPUs.
constexpr std::size_t kLaunchThreads = 4;
// Launches waiting for a thread: beyond it a desk's terminal fails to start and says why.
constexpr std::size_t kMaximumWaiting = 4096;

void kill_child(const Job& job) {
  if (job.pidfd) (void)::syscall(SYS_pidfd_send_signal, job.pidfd.get(), SIGKILL, nullptr, 0U);
}

void run(Job& job) {
  StandardStreams streams{job.input.get(), job.output.get(), job.error.get(), {}};
  for (const UniqueFd& descriptor : job.extra) streams.extra.push_back(descriptor.get());
  const CloneWatch watch = [&job](pid_t pid, int pidfd) {
    std::lock_guard lock(job.mutex);
    job.pid = pid;
    if (pidfd >= 0) job.pidfd.reset(::fcntl(pidfd, F_DUPFD_CLOEXEC, 0));
    job.cloned = true;
    if (job.cancelled) kill_child(job);
    job.changed.notify_all();
  };
  // Nothing may leave a launch thread: what would have reached the caller reaches it here.
  std::optional<Result<StartingSandbox>> started;
  try {
    started.emplace(start_sharing_memory(job.spec, job.command, streams, watch));
  } catch (const std::exception& failure) {
    started.emplace(Error::make(ErrorCode::internal,
                                std::string("The sandbox could not be set up: its launch failed: ") + failure.what()));
  }
  // The child holds its own copies of the streams now, or there is no child.
  job.input.reset();
  job.output.reset();
  job.error.reset();
  job.extra.clear();
  {
    std::lock_guard lock(job.mutex);
    job.result = std::move(started);
    job.over = true;
    job.changed.notify_all();
  }
  job.done_write.reset();  // end of file on the caller's done_fd()
}

// The threads and their queue, made at the first background start and never destroyed:
// every thread must outlive the sandboxes it made (background_start.h).
class LaunchThreads {
 public:
  static LaunchThreads& get() {
    static LaunchThreads* const threads = new LaunchThreads();  // never deleted, on purpose
    return *threads;
  }

  Result<void> queue(std::shared_ptr<Job> job) {
    std::lock_guard lock(mutex_);
    if (waiting_.size() >= kMaximumWaiting) {
      return Error::make(ErrorCode::system, "The sandbox could not be set up: " +
                                                            std::to_string(kMaximumWaiting) +
                                                            " launches already wait for deskd's launch threads.");
    }
    if (idle_ == 0 && threads_ < kLaunchThreads) {
      try {
        std::thread(&LaunchThreads::serve, this).detach();
        ++threads_;
        ++idle_;
      } catch (const std::system_error& failure) {
        if (threads_ == 0) {
          return Error::make(ErrorCode::system,
                             std::string("The sandbox could not be set up: starting a launch thread failed: ") +
                                 failure.what());
        }  // else the threads there are take it in turn
      }
    }
    waiting_.push_back(std::move(job));
    wake_.notify_one();
    return success();
  }

 private:
  LaunchThreads() = default;

  void serve() {
    // Signals are the event loop's: none is delivered here, and a launch that shares
    // memory blocks them anyway (launcher.cpp).
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, nullptr);
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return !waiting_.empty(); });
        job = std::move(waiting_.front());
        waiting_.pop_front();
        --idle_;
      }
      bool cancelled = false;
      {
        std::lock_guard lock(job->mutex);
        job->taken_by_thread = true;
        cancelled = job->cancelled;
      }
      if (!cancelled) run(*job);  // a cancelled job's owner no longer waits for it
      job.reset();  // the last reference if its owner is gone: what it made is reaped here
      std::lock_guard lock(mutex_);
      ++idle_;
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> waiting_;
  std::size_t threads_ = 0;
  std::size_t idle_ = 0;
};

Result<void> copy_descriptor(int descriptor, UniqueFd& copy) {
  if (descriptor < 0) return success();
  copy.reset(::fcntl(descriptor, F_DUPFD_CLOEXEC, 0));
  if (!copy) return Error::from_errno(errno, "The sandbox could not be set up: copying a descriptor for it failed");
  return success();
}

}  // namespace

Result<std::unique_ptr<BackgroundStart>> BackgroundStart::begin(const SandboxSpec& spec,
                                                                const std::vector<std::string>& command,
                                                                const StandardStreams& streams) {
  auto job = std::make_shared<Job>(spec, command);
  job->spec.started = {};  // the caller's StartingSandbox reports the start, on its thread
  DESKD_RETURN_IF_ERROR(copy_descriptor(streams.input, job->input));
  DESKD_RETURN_IF_ERROR(copy_descriptor(streams.output, job->output));
  DESKD_RETURN_IF_ERROR(copy_descriptor(streams.error, job->error));
  for (const int descriptor : streams.extra) {
    job->extra.emplace_back();
    DESKD_RETURN_IF_ERROR(copy_descriptor(descriptor, job->extra.back()));
  }
  int done[2];
  if (::pipe2(done, O_CLOEXEC) != 0) {
    return Error::from_errno(errno, "The sandbox could not be set up: creating its start pipe failed");
  }
  job->done_read.reset(done[0]);
  job->done_write.reset(done[1]);
  DESKD_RETURN_IF_ERROR(LaunchThreads::get().queue(job));
  return std::unique_ptr<BackgroundStart>(new BackgroundStart(std::move(job)));
}

BackgroundStart::BackgroundStart(std::shared_ptr<Job> job) : job_(std::move(job)) {}

BackgroundStart::~BackgroundStart() {
  std::unique_lock lock(job_->mutex);
  if (!job_->over) {
    job_->cancelled = true;
    kill_child(*job_);
    // Not yet taken by a thread: it never will be run. Taken but not cloned: the thread
    // kills the child as soon as it is made and reaps it when it drops the job, so a
    // launch stuck before its clone (a host path that hangs) does not hold this thread,
    // the event loop. Cloned: killed above; the thread is waited for (it ends at once),
    // and the sandbox is reaped here.
    if (!job_->taken_by_thread || !job_->cloned) return;
    job_->changed.wait(lock, [&] { return job_->over; });
  }
  std::optional<Result<StartingSandbox>> result = std::move(job_->result);
  job_->result.reset();
  lock.unlock();
  // result goes here: an unfinished sandbox is killed and reaped.
}

int BackgroundStart::done_fd() const { return job_->done_read.get(); }

pid_t BackgroundStart::pid() const {
  std::unique_lock lock(job_->mutex);
  job_->changed.wait(lock, [&] { return job_->cloned || job_->over; });
  return job_->pid;
}

Result<StartingSandbox> BackgroundStart::take() {
  std::unique_lock lock(job_->mutex);
  job_->changed.wait(lock, [&] { return job_->over; });
  if (!job_->result) return Error::make(ErrorCode::internal, "The sandbox's start was already taken.");
  Result<StartingSandbox> result = std::move(*job_->result);
  job_->result.reset();
  return result;
}

}  // namespace deskd::sandbox
