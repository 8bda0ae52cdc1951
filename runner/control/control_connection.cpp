#include "runner/control/control_connection.h"

#include <boost/json.hpp>

#include <cstdio>

#include "base/asio_await.h"
#include "runner/control/control_dispatch.h"
#include "runner/control/control_service.h"

namespace deskd::control {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::local::stream_protocol;

namespace {

constexpr std::size_t kReadChunkBytes = 64 * 1024;
// A read buffer that once held a long line gives it back when it is this much larger than
// what it holds.
constexpr std::size_t kKeptReadCapacity = 256 * 1024;
// A queue that held this much is worth giving back to the system once it drains.
constexpr std::size_t kBurstBytes = 256 * 1024;
// A client's requests are answered this many at a time before others get their turn: a
// client that pipelines thousands of lines must not hold the loop for the whole batch.
constexpr int kRequestsPerTurn = 64;

}  // namespace

void report_escape(std::exception_ptr escaped, ConnectionContext& context) {
  if (!escaped) return;
  try {
    std::rethrow_exception(escaped);
  } catch (const std::exception& error) {
    context.log.warn("connection failed", std::string("control connection: ") + error.what());
  }
}

Connection::Connection(stream_protocol::socket socket, std::shared_ptr<ConnectionContext> context)
    : socket_(std::move(socket)),
      context_(std::move(context)),
      writable_(socket_.get_executor(), asio::steady_timer::time_point::max()),
      closed_signal_(socket_.get_executor(), asio::steady_timer::time_point::max()),
      flush_deadline_(socket_.get_executor()),
      request_deadline_(socket_.get_executor()) {}

void Connection::send(std::string line) {
  if (closed_ || finishing_) return;
  // The line that reaches the cap is still queued (a single large reply is fine); the next
  // one finds the queue full. So a connection holds at most the cap plus one line.
  if (pending_bytes_ >= context_->client_buffer_bytes) {
    too_slow();
    return;
  }
  queue_line(std::move(line));
}

void Connection::queue_line(std::string line) {
  line += '\n';
  pending_bytes_ += line.size();
  peak_bytes_ = std::max(peak_bytes_, pending_bytes_);
  outgoing_.push_back(std::move(line));
  if (writing_) return;
  writing_ = true;
  asio::co_spawn(socket_.get_executor(), drain(shared_from_this()),
                 [context = context_](std::exception_ptr escaped) { report_escape(escaped, *context); });
}

asio::awaitable<void> Connection::drain(std::shared_ptr<Connection> self) {
  while (!self->outgoing_.empty() && !self->closed_) {
    auto [error, written] = co_await asio::async_write(self->socket_, asio::buffer(self->outgoing_.front()), kAwait);
    // close() may have run while the write was in flight: it leaves the line being
    // written alone (the write still refers to it) and the rest is dropped here.
    if (self->closed_) break;
    self->pending_bytes_ -= self->outgoing_.front().size();
    self->outgoing_.pop_front();
    if (error) {
      self->close();
      break;
    }
    self->writable_.cancel();
    if (self->finishing_) self->arm_flush_deadline();  // progress: the client is reading
  }
  self->writing_ = false;
  if (self->closed_) self->drop_queue();
  if (self->outgoing_.empty()) {
    // A queue that held a burst gives its memory back: the deque's blocks now, the heap's
    // free pages once enough was freed.
    if (self->peak_bytes_ >= kBurstBytes) {
      std::deque<std::string>().swap(self->outgoing_);
      self->context_->releaser.released(self->peak_bytes_);
    }
    self->peak_bytes_ = 0;
  }
  self->writable_.cancel();
  if (self->finishing_) self->close();
}

asio::awaitable<void> Connection::wait_writable() {
  // Event streams leave the upper half of the cap to replies.
  while (pending_bytes_ > context_->client_buffer_bytes / 2 && !closed_) {
    co_await writable_.async_wait(kAwait);
  }
}

void Connection::drop_queue() {
  // A write in flight still refers to the front line; drain() drops it once it has ended.
  if (writing_ && !outgoing_.empty()) {
    std::string in_flight = std::move(outgoing_.front());
    std::deque<std::string>().swap(outgoing_);
    pending_bytes_ = in_flight.size();
    outgoing_.push_back(std::move(in_flight));
  } else {
    std::deque<std::string>().swap(outgoing_);
    pending_bytes_ = 0;
  }
  if (peak_bytes_ >= kBurstBytes) context_->releaser.released(peak_bytes_);
  peak_bytes_ = pending_bytes_;
}

void Connection::too_slow() {
  const std::size_t waiting = pending_bytes_;
  context_->log.warn("too slow", "dropped a control client (" + sender_ + ") that read too slowly: " +
                                     std::to_string(waiting) + " bytes of replies and events were waiting for it");
  end_follows();
  drop_queue();
  // Behind the line being written, if any: the client sees the end of that line, then this.
  queue_line(reply_error(nullptr, code::kTooSlow,
                         "You read too slowly: " + std::to_string(waiting) +
                             " bytes of replies and events were waiting for you (the limit is " +
                             std::to_string(context_->client_buffer_bytes) + "); deskd closes this connection."));
  finish_then_close();
}

void Connection::finish_then_close() {
  if (closed_) return;
  finishing_ = true;
  // No more requests: a read that is waiting ends now, with end of stream.
  boost::system::error_code ignored;
  socket_.shutdown(stream_protocol::socket::shutdown_receive, ignored);
  if (!writing_) {
    close();
    return;
  }
  arm_flush_deadline();
}

void Connection::arm_flush_deadline() {
  flush_deadline_.expires_after(kFlushTimeout);
  flush_deadline_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    if (error) return;  // re-armed or cancelled
    if (auto self = weak.lock()) self->close();
  });
}

// A connection that holds a place without using it (it sends nothing, or a line that never
// ends) would keep others out for as long as it likes; one that follows events or waits for
// an answer is using its place, and is looked at again a deadline later.
void Connection::arm_request_deadline() {
  request_deadline_.expires_after(context_->request_deadline);
  request_deadline_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    if (error) return;  // restarted or cancelled
    auto self = weak.lock();
    if (!self || self->closed_ || self->finishing_) return;
    if (!self->follows_.empty() || self->answers_pending_ > 0) {
      self->arm_request_deadline();
      return;
    }
    self->close_idle();
  });
}

void Connection::close_idle() {
  char deadline[32];
  std::snprintf(deadline, sizeof deadline, "%g", static_cast<double>(context_->request_deadline.count()) / 1000.0);
  context_->log.warn("idle client", "closed a control connection (" + sender_ + ") that sent no complete request within " +
                                        std::string(deadline) + " seconds");
  send(reply_error(nullptr, code::kIdle,
                   "You sent no complete request within " + std::string(deadline) +
                       " seconds; deskd closes connections that hold a place without using it."));
  finish_then_close();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  end_follows();
  boost::system::error_code ignored;
  socket_.shutdown(stream_protocol::socket::shutdown_both, ignored);
  socket_.close(ignored);
  drop_queue();
  writable_.cancel();
  flush_deadline_.cancel();
  request_deadline_.cancel();
  closed_signal_.cancel();
}

// Answers one request line: through the one dispatch (control_dispatch.h), streaming the
// follows itself.
void Connection::handle(std::string_view line) {
  ParsedRequest parsed = parse_control_request(line);
  const ControlRequest& request = parsed.request;
  if (context_->stopping) {
    send(reply_error(request.id, code::kStopping, context_->stopping_message));
    return;
  }
  if (parsed.problem) context_->log.warn("bad request", "a bad control request from " + sender_ + ": " + *parsed.problem);
  // A reply that comes later (a send, a reload) finds the connection as it is then.
  ++answers_pending_;
  const auto reply = [weak = weak_from_this()](std::string reply_line) {
    auto self = weak.lock();
    if (!self) return;
    --self->answers_pending_;
    if (!self->closed_) self->send(std::move(reply_line));
  };
  const Dispatched dispatched = dispatch_control_request(context_->service, parsed, ControlCaller{sender_, privileged_},
                                                         reply);
  if (dispatched == Dispatched::answered) return;
  --answers_pending_;
  if (dispatched == Dispatched::follow) return follow(request);
  unfollow(request);
}

// Answers a line over the limit and hangs up once the answer is written.
void Connection::refuse_long_line() {
  context_->log.warn("bad request", "a control request line from " + sender_ + " was longer than " +
                                        std::to_string(kMaximumRequestBytes) + " bytes; its connection is closed");
  send(reply_error(nullptr, code::kTooLong,
                   "The request line is longer than " + std::to_string(kMaximumRequestBytes) +
                       " bytes; the connection is closed."));
  finish_then_close();
}

asio::awaitable<void> Connection::serve(std::shared_ptr<Connection> self) {
  std::string buffer;
  std::size_t start = 0;    // where the unanswered part of `buffer` begins
  std::size_t scanned = 0;  // how far it is known to hold no newline
  int answered_this_turn = 0;
  self->arm_request_deadline();
  while (!self->closed_ && !self->finishing_) {
    const std::size_t newline = buffer.find('\n', scanned);
    // A long line whose end arrived in the same read as its limit is still too long.
    if (newline != std::string::npos && newline - start > kMaximumRequestBytes) {
      self->refuse_long_line();
      break;
    }
    if (newline != std::string::npos) {
      std::string_view line(buffer.data() + start, newline - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") != std::string_view::npos) {
        try {
          self->handle(line);
        } catch (const std::exception& error) {
          // A follow's bug must cost one reply, never the daemon (the dispatch catches the ops').
          self->send(reply_error(nullptr, code::kInternal, std::string("deskd failed to answer: ") + error.what()));
        }
        self->arm_request_deadline();  // a complete request: the wait for the next starts now
        if (++answered_this_turn >= kRequestsPerTurn) {
          answered_this_turn = 0;
          co_await asio::post(self->socket_.get_executor(), asio::use_awaitable);
        }
      }
      start = newline + 1;
      scanned = start;
      continue;
    }
    if (buffer.size() - start > kMaximumRequestBytes) {
      self->refuse_long_line();
      break;
    }
    // Everything before `start` is answered: drop it once per read, not once per line.
    buffer.erase(0, start);
    start = 0;
    scanned = buffer.size();
    if (buffer.capacity() > kKeptReadCapacity && buffer.size() < kKeptReadCapacity / 4) {
      self->context_->releaser.released(buffer.capacity());
      buffer.shrink_to_fit();
    }
    answered_this_turn = 0;
    const std::size_t old_size = buffer.size();
    buffer.resize(old_size + kReadChunkBytes);
    auto [error, read] = co_await self->socket_.async_read_some(asio::buffer(&buffer[old_size], kReadChunkBytes), kAwait);
    buffer.resize(old_size + (error ? 0 : read));
    if (error) break;
  }
  // The client went away (or sent too much): its follows end with it, and what it was
  // sent is still written, as far as it reads it.
  self->end_follows();
  self->finish_then_close();
}

asio::awaitable<void> Connection::serve_until_closed(std::shared_ptr<Connection> self) {
  // Made before it is awaited: GCC 12 mishandles the copied argument of a coroutine
  // called inside a co_await expression.
  asio::awaitable<void> serving = serve(self);
  co_await std::move(serving);
  // serve() ends at the last request; the replies and the goodbye may still be on their way.
  while (!self->closed_) {
    (void)co_await self->closed_signal_.async_wait(kAwait);
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) self->close();
  }
}

}  // namespace deskd::control
