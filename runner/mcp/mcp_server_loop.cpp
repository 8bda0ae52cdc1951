#include "runner/mcp/mcp_server.h"
// McpServer's reading loop: lines in, requests spawned up to kMaximumRequestsInFlight (more
// wait, bounded in count and bytes), replies out as they are ready, and what end of input
// means. What one message gets is mcp_server.cpp's.

#include <sys/stat.h>

#include <boost/asio.hpp>

#include <cstdio>
#include <deque>
#include <exception>
#include <utility>

#include "base/asio_await.h"
#include "runner/mcp/line_stream.h"

namespace deskd::tools {
namespace {

namespace asio = boost::asio;
using asio::awaitable;

bool is_regular_file(int fd) {
  struct stat status {};
  return ::fstat(fd, &status) == 0 && S_ISREG(status.st_mode);
}

}  // namespace

// What serve() shares with the requests it spawned.
struct McpServer::Serving {
  Serving(const asio::any_io_executor& executor_in, Output output)
      : executor(executor_in),
        out(std::move(output)),
        request_ended(executor_in, asio::steady_timer::time_point::max()) {}
  asio::any_io_executor executor;
  Output out;
  asio::steady_timer request_ended;  // woken whenever a request ends
  std::size_t in_flight = 0;
  // Requests read while every slot was taken, with their sizes; reading goes on past them
  // (so that a cancellation, which frees a slot, is read) until they fill kPendingBytes.
  std::deque<std::pair<std::shared_ptr<McpMessage>, std::size_t>> pending;
  std::size_t pending_bytes = 0;
  bool dropping = false;  // the client hung up: what is pending never starts
};

// Outside serve()'s coroutine frame on purpose: GCC 12 warns falsely
// (-Wmismatched-new-delete) about a frame that builds this lambda.
void McpServer::spawn(std::shared_ptr<McpMessage> parsed, std::shared_ptr<Serving> serving) {
  ++serving->in_flight;
  auto request = std::make_shared<Request>();
  live_.insert(request);
  auto handle = [this, serving, request, parsed]() -> awaitable<void> {
    try {
      co_await process(std::move(*parsed), request, serving->out);
    } catch (const boost::system::system_error& error) {
      // A cancelled request's tool call ends with its cancellation (ToolRegistry::call
      // passes it on); the client asked for that, or the server is stopping: nothing failed.
      if (!request->cancelled || error.code() != asio::error::operation_aborted) {
        log(std::string("a request failed: ") + error.what());
      }
    } catch (const std::exception& error) {
      log(std::string("a request failed: ") + error.what());
    }
    // Always counted down, or serve() would wait for this request forever.
    live_.erase(request);
    --serving->in_flight;
    serving->request_ended.cancel();
    dispatch(serving);
  };
  asio::co_spawn(serving->executor, std::move(handle),
                 asio::bind_cancellation_slot(request->signal.slot(), [request](std::exception_ptr escaped) {
                   if (escaped) std::fputs("deskd mcp: a request ended with an exception\n", stderr);
                 }));
}

void McpServer::drop_pending(const std::string& key) {
  if (serving_ == nullptr) return;
  auto& pending = serving_->pending;
  for (auto each = pending.begin(); each != pending.end(); ++each) {
    const std::optional<std::string>& raw_id = each->first->raw_id;
    if (raw_id && request_id_key(*raw_id) == key) {
      serving_->pending_bytes -= each->second;
      pending.erase(each);
      serving_->request_ended.cancel();  // room to read again
      return;
    }
  }
}

void McpServer::dispatch(const std::shared_ptr<Serving>& serving) {
  if (serving->dropping) {
    serving->pending.clear();
    serving->pending_bytes = 0;
  }
  while (!serving->pending.empty() && serving->in_flight < kMaximumRequestsInFlight) {
    auto [parsed, bytes] = std::move(serving->pending.front());
    serving->pending.pop_front();
    serving->pending_bytes -= bytes;
    spawn(std::move(parsed), serving);
  }
}

awaitable<bool> McpServer::serve(asio::any_io_executor executor, UniqueFd input, UniqueFd output) {
  const bool batch = is_regular_file(input.get());
  LineReader reader(executor, std::move(input), kMaximumMessageBytes);
  LineWriter writer(executor, std::move(output));
  reader_ = &reader;
  if (stopped_) reader.cancel();
  const auto write = [&writer](std::string line) { writer.write_line(std::move(line)); };
  auto serving = std::make_shared<Serving>(executor, Output{write, write});
  serving_ = serving;

  while (!writer.failed()) {
    while (serving->pending.size() >= kMaximumRequestsInFlight || serving->pending_bytes >= kMaximumMessageBytes) {
      co_await serving->request_ended.async_wait(kAwait);
    }
    std::optional<LineReader::Line> line = co_await reader.read_line();
    if (!line) break;
    if (line->too_long) {
      refuse(
          std::nullopt,
          {mcp::kParseError,
           "Parse error: the message is longer than " + std::to_string(kMaximumMessageBytes) + " bytes.", std::nullopt},
          serving->out);
      continue;
    }
    if (line->text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
    const std::size_t bytes = line->text.size();
    auto parsed = std::make_shared<McpMessage>(read_mcp_message(std::move(line->text)));
    // A notification (a cancellation above all) never waits for a free slot: it is what
    // may free one, and it is handled at once.
    const bool request_like = !parsed->value.is_object() || parsed->value.as_object().contains("id");
    if (!request_like) {
      spawn(std::move(parsed), serving);
      continue;
    }
    serving->pending.emplace_back(std::move(parsed), bytes);
    serving->pending_bytes += bytes;
    dispatch(serving);
  }
  // End of a stream is the client hanging up (MCP's stdio shutdown): nobody waits for the
  // calls under way, so they are stopped rather than waited for, up to a command's timeout.
  if (!stopped_ && !batch) {
    serving->dropping = true;
    dispatch(serving);
    cancel_all();
  }
  while (serving->in_flight > 0 || !serving->pending.empty()) co_await serving->request_ended.async_wait(kAwait);
  serving_ = nullptr;
  reader_ = nullptr;
  co_return co_await writer.flush();
}

void McpServer::stop() {
  stopped_ = true;
  if (reader_ != nullptr) reader_->cancel();
}

}  // namespace deskd::tools
