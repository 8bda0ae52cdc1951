#pragma once
// TaskGroup: the child coroutines of one owner (a desk's parts, its /btw answers, the
// control socket's connections), started into the group, cancelled and awaited as a whole.
// The one rule for child coroutines (docs/ARCHITECTURE.md, "Child coroutines"): a child is
// never left running on its own, and nobody waits for children by polling.
//
// Not thread-safe: spawn, emit and wait from the group's executor (deskd's one loop).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <list>
#include <memory>

namespace deskd {

class TaskGroup {
 public:
  /// Told each exception a child let out (the child is over; the group and its other
  /// children go on). Runs on the executor.
  using ReportEscaped = std::function<void(std::exception_ptr)>;

  TaskGroup(boost::asio::any_io_executor executor, ReportEscaped report_escaped);
  /// The owner emits and waits first (its children use what it holds). Children still
  /// running are not cancelled here: they end on their own, the group's state living until
  /// the last has, so nothing of it dangles (a loop destroyed with them frees them all).
  ~TaskGroup() = default;
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  /// Starts `child` on the executor, with a cancellation slot of its own that emit() reaches.
  /// Once it has ended, the group forgets it: many short children hold no memory.
  void spawn(boost::asio::awaitable<void> child);

  /// Emits `type` to every child running now.
  void emit(boost::asio::cancellation_type type);

  /// How many children are running.
  std::size_t size() const;
  bool empty() const { return size() == 0; }

  /// Returns once every child has ended, those spawned meanwhile too; at once when none
  /// runs. Cancelling the waiting coroutine ends the wait, not the children: it throws
  /// operation_aborted, or, where the coroutine set throw_if_cancelled(false), returns early
  /// (it reads its cancellation state, as after any other wait).
  boost::asio::awaitable<void> async_wait();

 private:
  struct State {
    State(boost::asio::any_io_executor executor_in, ReportEscaped report_in);
    boost::asio::any_io_executor executor;
    ReportEscaped report_escaped;
    std::list<boost::asio::cancellation_signal> children;
    // Never expires: waiters wait on it, and the last child to end cancels their waits.
    boost::asio::steady_timer all_ended;
  };
  std::shared_ptr<State> state_;
};

}  // namespace deskd
