#include "runner/mcp/line_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio.hpp>

#include <cstdio>
#include <deque>
#include <exception>

#include "base/asio_await.h"

namespace deskd::tools {
namespace {

namespace asio = boost::asio;
constexpr std::size_t kReadChunkBytes = 64 * 1024;

// Regular files and devices such as /dev/null cannot be waited on with epoll (Asio would
// accept them and then never block); they never make a reader wait for long, so they are
// read and written directly. Pipes, sockets and terminals go through the event loop.
bool waitable(int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return false;
  if (S_ISCHR(status.st_mode)) return ::isatty(fd) == 1;
  return S_ISFIFO(status.st_mode) || S_ISSOCK(status.st_mode);
}

// Asio makes the descriptor non-blocking, and the flag belongs to the open file that deskd
// shares with whoever started it (a terminal, a parent's pipe): it is put back on the way out.
struct Descriptor {
  Descriptor(asio::any_io_executor executor, UniqueFd fd) {
    if (waitable(fd.get())) {
      saved_flags = ::fcntl(fd.get(), F_GETFL);
      stream.emplace(executor, fd.release());
    } else {
      direct = std::move(fd);
    }
  }
  ~Descriptor() {
    if (stream && saved_flags >= 0) ::fcntl(stream->native_handle(), F_SETFL, saved_flags);
  }

  std::optional<asio::posix::stream_descriptor> stream;
  UniqueFd direct;
  int saved_flags = -1;
};

}  // namespace

struct LineReader::State {
  State(asio::any_io_executor executor, UniqueFd fd, std::size_t maximum)
      : descriptor(std::move(executor), std::move(fd)), maximum_line_bytes(maximum) {}

  Descriptor descriptor;
  std::size_t maximum_line_bytes;
  std::string buffer;
  std::size_t scanned = 0;  // bytes of `buffer` known to hold no newline
  bool discarding = false;  // inside a line that is too long, until its newline
  bool ended = false;
  bool cancelled = false;
};

LineReader::LineReader(asio::any_io_executor executor, UniqueFd fd, std::size_t maximum_line_bytes)
    : state_(std::make_unique<State>(std::move(executor), std::move(fd), maximum_line_bytes)) {}

LineReader::~LineReader() = default;

void LineReader::cancel() {
  state_->cancelled = true;
  if (state_->descriptor.stream) state_->descriptor.stream->cancel();
}

asio::awaitable<std::optional<LineReader::Line>> LineReader::read_line() {
  State& state = *state_;
  for (;;) {
    if (state.cancelled) co_return std::nullopt;
    const std::size_t newline = state.buffer.find('\n', state.scanned);
    if (newline != std::string::npos) {
      Line line;
      if (state.discarding) {
        line.too_long = true;
        state.discarding = false;
      } else {
        line.text.assign(state.buffer, 0, newline);
        if (!line.text.empty() && line.text.back() == '\r') line.text.pop_back();
      }
      state.buffer.erase(0, newline + 1);
      state.scanned = 0;
      co_return line;
    }
    state.scanned = state.buffer.size();
    if (state.buffer.size() > state.maximum_line_bytes) {
      // Keep only the knowledge that this line is too long, never the line.
      state.discarding = true;
      state.buffer.clear();
      state.scanned = 0;
    }
    if (state.ended) {
      if (state.discarding) {
        state.discarding = false;
        co_return Line{{}, true};
      }
      if (state.buffer.empty()) co_return std::nullopt;
      Line last{std::move(state.buffer), false};
      state.buffer.clear();
      state.scanned = 0;
      co_return last;
    }

    const std::size_t old_size = state.buffer.size();
    state.buffer.resize(old_size + kReadChunkBytes);
    std::size_t count = 0;
    if (state.descriptor.stream) {
      auto [error, read] =
          co_await state.descriptor.stream->async_read_some(asio::buffer(&state.buffer[old_size], kReadChunkBytes), kAwait);
      count = error ? 0 : read;
    } else {
      const ssize_t read =
          retry_on_eintr([&] { return ::read(state.descriptor.direct.get(), &state.buffer[old_size], kReadChunkBytes); });
      count = read > 0 ? static_cast<std::size_t>(read) : 0;
    }
    state.buffer.resize(old_size + count);
    if (count == 0) state.ended = true;
  }
}

struct LineWriter::State {
  State(asio::any_io_executor executor_, UniqueFd fd)
      : executor(executor_), descriptor(executor_, std::move(fd)), idle(executor_) {
    idle.expires_at(asio::steady_timer::time_point::max());
  }

  // Holds the state itself: the writer may be destroyed while lines are still in flight.
  static asio::awaitable<void> drain(std::shared_ptr<State> self) {
    while (!self->queue.empty() && !self->failed) {
      auto [error, written] =
          co_await asio::async_write(*self->descriptor.stream, asio::buffer(self->queue.front()), kAwait);
      if (error) self->failed = true;
      self->queue.pop_front();
    }
    self->queue.clear();
    self->writing = false;
    self->idle.cancel();  // wakes every flush()
  }

  asio::any_io_executor executor;
  Descriptor descriptor;
  std::deque<std::string> queue;
  bool writing = false;
  bool failed = false;
  asio::steady_timer idle;
};

LineWriter::LineWriter(asio::any_io_executor executor, UniqueFd fd)
    : state_(std::make_shared<State>(std::move(executor), std::move(fd))) {}

LineWriter::~LineWriter() {
  if (state_->descriptor.stream) state_->descriptor.stream->cancel();
}

bool LineWriter::failed() const { return state_->failed; }

void LineWriter::write_line(std::string text) {
  State& state = *state_;
  if (state.failed) return;
  text += '\n';
  if (!state.descriptor.stream) {
    for (std::size_t offset = 0; offset < text.size();) {
      const ssize_t written = retry_on_eintr(
          [&] { return ::write(state.descriptor.direct.get(), text.data() + offset, text.size() - offset); });
      if (written <= 0) {
        state.failed = true;
        return;
      }
      offset += static_cast<std::size_t>(written);
    }
    return;
  }
  if (!state.writing) {
    // A reply nearly always fits the pipe at once: written here, it needs no coroutine and no
    // round of the loop (a warm command's round trip is a few hundred microseconds). Never
    // blocking: what does not fit goes through the queue below.
    boost::system::error_code error;
    state.descriptor.stream->non_blocking(true, error);
    const std::size_t written = error ? 0 : state.descriptor.stream->write_some(asio::buffer(text), error);
    if (error && error != asio::error::would_block && error != asio::error::try_again) {
      state.failed = true;
      return;
    }
    if (written == text.size()) return;
    text.erase(0, written);
  }
  state.queue.push_back(std::move(text));
  if (state.writing) return;
  state.writing = true;
  asio::co_spawn(state.executor, State::drain(state_), [](std::exception_ptr escaped) {
    if (!escaped) return;
    try {
      std::rethrow_exception(escaped);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "deskd: writing a line failed: %s\n", error.what());
    }
  });
}

asio::awaitable<bool> LineWriter::flush() {
  auto state = state_;
  while (state->writing) co_await state->idle.async_wait(kAwait);
  co_return !state->failed;
}

}  // namespace deskd::tools
