#pragma once
// McpServer: a desk's tools as a Model Context Protocol server (JSON-RPC 2.0, one message a
// line), so that any MCP client can use the desk's sandbox as its shell. Protocol versions
// 2025-06-18 and 2025-11-25 through `initialize`, and `server/discover` of the 2026-07-28
// revision; `ping`, `tools/list`, `tools/call`.
//
// Nothing a client sends can crash it: bad JSON, bad requests and bad parameters become
// JSON-RPC errors, a failed tool becomes a result with `isError: true`, notifications and
// responses are never answered.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace deskd::tools {

class LineReader;
class ToolRegistry;

/// Who the server says it is.
struct McpServerInfo {
  std::string name = "deskd";
  std::string version = "0";
};

class McpServer {
 public:
  /// Protocol versions answered to `initialize`, oldest first; the newest is the fallback.
  static constexpr const char* kProtocolVersions[] = {"2025-06-18", "2025-11-25"};
  /// A longer message is refused (-32700) without being kept.
  static constexpr std::size_t kMaximumMessageBytes = std::size_t{64} << 20;
  /// Requests handled at the same time; further lines wait to be read.
  static constexpr std::size_t kMaximumRequestsInFlight = 16;

  /// `tools` must outlive the server.
  McpServer(ToolRegistry& tools, McpServerInfo info);
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  /// Answers one message (one line): the reply, or nullopt when none is due.
  boost::asio::awaitable<std::optional<std::string>> handle_message(std::string_view message);

  /// Reads messages from `input` and writes replies to `output` until end of input or
  /// stop(); requests run concurrently and replies go out as they are ready. Waits for the
  /// requests under way before it returns. False when the replies could not be written.
  boost::asio::awaitable<bool> serve(boost::asio::any_io_executor executor, UniqueFd input, UniqueFd output);

  /// Makes serve() stop reading and return once the requests under way have been answered.
  void stop();

 private:
  ToolRegistry& tools_;
  McpServerInfo info_;
  LineReader* reader_ = nullptr;  // while serve() runs
  bool stopped_ = false;
};

}  // namespace deskd::tools
