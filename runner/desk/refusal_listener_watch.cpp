// The desk's seccomp listeners, answered on the desk's executor (refusal_recorder.h).
// Each notification costs deskd two ioctls and a poll, plus the naming; the first of each
// refusal in a fold window also reads its caller's /proc files (bounded, best effort). There
// is no queue in deskd: the kernel holds each caller until it is answered, so a desk that
// spins on refused calls slows only itself, and deskd's memory does not grow with it.

#include <poll.h>

#include <algorithm>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "runner/desk/refusal_recorder.h"
#include "sandbox/seccomp_notification.h"

namespace deskd::desk {

class DeskRefusalRecorder::ListenerWatch : public std::enable_shared_from_this<ListenerWatch> {
 public:
  ListenerWatch(const boost::asio::any_io_executor& executor, UniqueFd listener)
      : descriptor_(executor, listener.release()) {}

  void arm(std::weak_ptr<DeskRefusalRecorder> recorder) {
    descriptor_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                           [self = shared_from_this(), recorder](const boost::system::error_code& error) {
                             if (error) return;  // cancelled: the recorder is going
                             auto owner = recorder.lock();
                             if (!owner) return;
                             if (self->answer(*owner)) {
                               self->arm(recorder);
                             } else {
                               owner->forget(self.get());
                             }
                           });
  }

  void cancel() {
    boost::system::error_code ignored;
    descriptor_.close(ignored);
  }

 private:
  // Answers what is waiting, at most kNoticesPerWakeUp; false once the listener is over
  // (every process under the filter has ended: POLLHUP) or broken.
  bool answer(DeskRefusalRecorder& recorder) {
    const int listener = descriptor_.native_handle();
    for (int answered = 0; answered < kNoticesPerWakeUp; ++answered) {
      // SECCOMP_IOCTL_NOTIF_RECV blocks when nothing waits: look first.
      pollfd ready{listener, POLLIN, 0};
      if (::poll(&ready, 1, 0) <= 0) return true;
      if ((ready.revents & POLLIN) == 0) return (ready.revents & (POLLHUP | POLLERR | POLLNVAL)) == 0;
      auto received = sandbox::receive_seccomp_notice(listener);
      if (!received.ok()) return false;
      if (!*received) continue;  // its caller was killed meanwhile
      const sandbox::SeccompNotice& notice = **received;
      sandbox::Refusal refusal = sandbox::describe_seccomp_notice(notice);
      if (recorder.is_fresh(refusal)) {
        sandbox::RefusedProcess process = sandbox::describe_refused_process(notice.pid);
        // Still waiting: the pid was the caller's all along, not a reused one.
        if (sandbox::seccomp_notice_still_waiting(listener, notice)) refusal.process = std::move(process);
      }
      // Recorded before it is answered: the caller, and so its command, goes on only after.
      recorder.record(std::move(refusal));
      if (!sandbox::refuse_seccomp_notice(listener, notice, sandbox::refused_syscall_error(notice)).ok()) return false;
    }
    return true;
  }

  boost::asio::posix::stream_descriptor descriptor_;
};

void DeskRefusalRecorder::watch_seccomp_listener(UniqueFd listener) {
  if (!listener) return;
  sandbox::prefer_synchronous_wake_up(listener.get());
  auto watch = std::make_shared<ListenerWatch>(executor_, std::move(listener));
  {
    std::lock_guard lock(mutex_);
    watches_.push_back(watch);
  }
  watch->arm(weak_from_this());
}

void DeskRefusalRecorder::forget(const ListenerWatch* watch) {
  std::shared_ptr<ListenerWatch> ended;
  {
    std::lock_guard lock(mutex_);
    auto found = std::find_if(watches_.begin(), watches_.end(), [&](const auto& kept) { return kept.get() == watch; });
    if (found == watches_.end()) return;
    ended = std::move(*found);
    watches_.erase(found);
  }
  ended->cancel();
}

std::size_t DeskRefusalRecorder::listeners() const {
  std::lock_guard lock(mutex_);
  return watches_.size();
}

DeskRefusalRecorder::~DeskRefusalRecorder() {
  for (const auto& watch : watches_) watch->cancel();
  std::vector<boost::json::object> records;
  for (auto& [key, fold] : folds_) take_repeats(fold, records);
  publish_all(std::move(records));
}

}  // namespace deskd::desk
