#pragma once
// Lines over a file descriptor, on Asio: how the MCP server and `deskd shell` talk on their
// standard input and output, one message a line. Any kind of descriptor works — a pipe, a
// socket, a terminal, and also a regular file or /dev/null, which epoll cannot wait on and
// which are therefore read and written directly (they never block for long).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "base/unique_fd.h"

namespace deskd::tools {

/// Reads newline-terminated lines. Memory stays bounded by the longest line allowed.
class LineReader {
 public:
  struct Line {
    std::string text;       ///< Without its "\n" (and without a "\r" just before it).
    bool too_long = false;  ///< The line was longer than allowed: skipped, `text` empty.
  };

  LineReader(boost::asio::any_io_executor executor, UniqueFd fd, std::size_t maximum_line_bytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// The next line; a last line without "\n" counts. nullopt at end of input, on a read
  /// error, or once cancel() was called.
  boost::asio::awaitable<std::optional<Line>> read_line();

  /// Ends a pending read_line() and every later one as at end of input.
  void cancel();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Writes lines whole and in order, however many coroutines write at once.
class LineWriter {
 public:
  LineWriter(boost::asio::any_io_executor executor, UniqueFd fd);
  ~LineWriter();
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  /// Queues `text` and a "\n"; returns at once. Dropped once writing has failed.
  void write_line(std::string text);

  /// Waits until everything queued is written; false once a write has failed (the reader
  /// went away).
  boost::asio::awaitable<bool> flush();

  bool failed() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace deskd::tools
