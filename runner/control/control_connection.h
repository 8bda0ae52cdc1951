#pragma once
// Internal to runner/control: one client of the control socket. It reads request lines,
// answers them through the ControlService and writes through its own queue, so a slow or
// stuck client only ever delays itself. The queue is capped in bytes: event streams wait
// at half the cap (their subscriptions drop the oldest events meanwhile), and a client whose
// unread replies reach the cap is told it is too slow and dropped, so that a client that
// pipelines requests and never reads cannot grow deskd. Not for use outside runner/control.

#include <boost/asio.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runner/control/event_history.h"
#include "runner/control/log_limiter.h"
#include "runner/control/memory_release.h"
#include "runner/control_protocol/control_protocol.h"
#include "runner/events/event_bus.h"

namespace deskd::control {

class ControlService;

/// How long a connection that is closing may take to write what it still has queued; the
/// wait starts again at each line written, so only a client that reads nothing is cut off.
inline constexpr std::chrono::milliseconds kFlushTimeout{2000};
/// The largest page of kept events a replaying follow takes from the history at a time.
inline constexpr std::size_t kReplayPageBytes = std::size_t{256} << 10;

/// What every connection of one server shares.
struct ConnectionContext {
  ConnectionContext(boost::asio::any_io_executor executor, ControlService& service_, std::size_t client_buffer_bytes_,
                    std::function<void(const std::string&)> warn, std::chrono::milliseconds request_deadline_)
      : service(service_),
        client_buffer_bytes(client_buffer_bytes_),
        request_deadline(request_deadline_),
        log(executor, std::move(warn)),
        releaser(executor) {}

  ControlService& service;
  std::size_t client_buffer_bytes;  ///< the cap on one connection's queued output
  /// How long a connection may go without a complete request while it follows nothing and
  /// waits for no answer; then it is closed.
  std::chrono::milliseconds request_deadline;
  RateLimitedLog log;
  MemoryReleaser releaser;
  bool stopping = false;            ///< deskd is shutting down: requests get a "stopping" error
  std::string stopping_message;     ///< the sentence of that error
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::local::stream_protocol::socket socket, std::shared_ptr<ConnectionContext> context);

  /// Reads and answers request lines until the client goes away or the connection closes.
  static boost::asio::awaitable<void> serve(std::shared_ptr<Connection> self);
  /// serve(), then waits until the connection has closed (its last replies and goodbye
  /// written, or given up on): the whole life of a connection, as the server's group of
  /// connections awaits it. Cancelled, it closes the connection.
  static boost::asio::awaitable<void> serve_until_closed(std::shared_ptr<Connection> self);

  /// Queues one reply line (without its newline). A client whose queue already holds its
  /// cap is too slow: it gets one too_slow line instead and is dropped.
  void send(std::string line);
  /// Writes what is queued (up to kFlushTimeout without progress), then closes. Nothing
  /// more is read or answered.
  void finish_then_close();
  /// Closes at once; queued lines are dropped.
  void close();
  bool closed() const { return closed_; }
  boost::asio::local::stream_protocol::socket& socket() { return socket_; }
  /// Who the peer is, for messages ("uid 1000 (asha)"), and whether it is the operator
  /// (root or deskd's own uid), whom operator-only ops need.
  void set_sender(std::string sender, bool privileged) {
    sender_ = std::move(sender);
    privileged_ = privileged;
  }

  /// Tells every follow of this connection that deskd is stopping (they go on until stop).
  void tell_follows_stopping(const std::string& notice);
  /// Ends every follow with a final "stopping" error line, then finishes and closes.
  void end_for_stop(const std::string& message);

 private:
  struct Follow {
    boost::json::value id;
    std::shared_ptr<desk::EventSubscription> subscription;
    std::string desk;  ///< the desk it follows; empty: every desk
  };

  void queue_line(std::string line);
  static boost::asio::awaitable<void> drain(std::shared_ptr<Connection> self);
  boost::asio::awaitable<void> wait_writable();
  void arm_flush_deadline();
  void arm_request_deadline();
  void close_idle();
  void too_slow();
  void drop_queue();
  void end_follows();
  std::vector<boost::json::value> follow_ids() const;

  void handle(std::string_view line);
  void refuse_long_line();
  void follow(const ControlRequest& request);
  void unfollow(const ControlRequest& request);
  bool following(const std::string& key, const std::shared_ptr<desk::EventSubscription>& subscription) const;
  static boost::asio::awaitable<void> stream(std::shared_ptr<Connection> self, std::string key, boost::json::value id,
                                             std::shared_ptr<desk::EventSubscription> subscription,
                                             std::string desk_name, std::optional<EventHistory::Replay> page);

  boost::asio::local::stream_protocol::socket socket_;
  std::shared_ptr<ConnectionContext> context_;
  boost::asio::steady_timer writable_;        // cancelled whenever the queue shrinks
  boost::asio::steady_timer closed_signal_;   // never expires; cancelled by close()
  boost::asio::steady_timer flush_deadline_;  // a closing connection's last chance to write
  boost::asio::steady_timer request_deadline_;  // restarted at each complete request line
  std::string sender_;
  bool privileged_ = false;
  std::deque<std::string> outgoing_;
  std::size_t pending_bytes_ = 0;  // bytes in outgoing_
  std::size_t peak_bytes_ = 0;     // the most outgoing_ held since it was last empty
  bool writing_ = false;
  bool closed_ = false;
  bool finishing_ = false;  // writing what is queued, then closing
  std::size_t answers_pending_ = 0;  // requests answered later (a send, a reload) still unanswered
  std::map<std::string, Follow> follows_;  // by serialized request id
};

/// Reports an exception that escaped a connection's coroutine.
void report_escape(std::exception_ptr escaped, ConnectionContext& context);

}  // namespace deskd::control
