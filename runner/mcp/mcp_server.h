#pragma once
// McpServer: a desk's tools as a Model Context Protocol server (JSON-RPC 2.0, one message a
// line), so that any MCP client can use the desk's sandbox as its shell. Both eras of the
// protocol on one stdio (mcp_protocol.h): revisions 2025-06-18 and 2025-11-25 through
// `initialize` (required before anything but `ping` and `server/discover`), and 2026-07-28
// per request, without a handshake, on every request whose _meta names it; `server/discover`,
// `tools/list`, `tools/call`.
//
// Nothing a client sends can crash it: bad requests and bad parameters become JSON-RPC
// errors, a failed tool becomes a result with `isError: true` (and so, from 2025-11-25 on,
// do arguments that break the tool's inputSchema; an unknown tool stays -32602), notifications
// and responses are never answered. An error is never sent with a null id (MCP has none): a
// message whose id cannot be known is logged on stderr, and answered without an id only
// where the revision allows it (2025-11-25 and later). `notifications/cancelled` stops the
// call it names (a running command is ended) and that call gets no reply; a call that
// carries a progress token gets `notifications/progress` while it runs.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/unique_fd.h"
#include "runner/mcp/mcp_message.h"
#include "runner/mcp/mcp_protocol.h"
#include "runner/mcp/mcp_tool_catalog.h"

namespace deskd::tools {

class LineReader;
class ToolRegistry;

class McpServer {
 public:
  /// A longer message is refused (-32700) without being kept.
  static constexpr std::size_t kMaximumMessageBytes = std::size_t{64} << 20;
  /// Requests handled at the same time. As many more wait (up to kMaximumMessageBytes in
  /// all) while reading goes on, so that a cancellation still gets through; then reading
  /// waits too.
  static constexpr std::size_t kMaximumRequestsInFlight = 16;
  /// How often a call that asked for progress hears that it is still running, by default:
  /// well inside the 60 s a client waits by default between two signs of life.
  static constexpr std::chrono::milliseconds kDefaultProgressInterval{5000};

  /// `tools` must outlive the server.
  McpServer(ToolRegistry& tools, McpServerInfo info,
            std::chrono::milliseconds progress_interval = kDefaultProgressInterval);
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  /// Answers one message (one line): the last line it wrote (the reply), or nullopt when
  /// none is due. Progress notifications are not kept.
  boost::asio::awaitable<std::optional<std::string>> handle_message(std::string_view message);

  /// Reads messages from `input` and writes replies to `output` until end of input or
  /// stop(); requests run concurrently and replies go out as they are ready.
  ///
  /// At the end of a regular file every request read is answered first (a batch). At the
  /// end of any other input (a pipe, a socket: the client closed it, which is how MCP's
  /// stdio transport shuts down) the calls under way are cancelled (a running command is
  /// stopped) and get no reply. After stop() the calls under way are answered as they end.
  /// False when the replies could not be written.
  boost::asio::awaitable<bool> serve(boost::asio::any_io_executor executor, UniqueFd input, UniqueFd output);

  /// Makes serve() stop reading and return once the requests under way have been answered.
  void stop();

 private:
  struct Request {
    boost::asio::cancellation_signal signal;  // bound to the coroutine that handles the line
    bool cancelled = false;                   // the client no longer wants the answer
  };
  struct Serving;
  /// Where lines go: replies, and notifications (progress).
  struct Output {
    std::function<void(std::string)> reply;
    std::function<void(std::string)> notify;
  };

  boost::asio::awaitable<void> process(McpMessage parsed, std::shared_ptr<Request> request, Output out);
  boost::asio::awaitable<void> run_request(const McpMessage& parsed, std::shared_ptr<Request> request, Output out);
  // What a request gets under each era: a result, or nullopt with `error` set.
  boost::asio::awaitable<std::optional<boost::json::object>> run_legacy(std::string_view name,
                                                                        const boost::json::object& arguments,
                                                                        const McpMessage& parsed, mcp::RpcError& error,
                                                                        const Output& out);
  boost::asio::awaitable<std::optional<boost::json::object>> run_modern(std::string_view name,
                                                                        const boost::json::object& arguments,
                                                                        const std::string& revision,
                                                                        const McpMessage& parsed, mcp::RpcError& error,
                                                                        const Output& out);
  std::optional<boost::json::object> list_tools(const boost::json::object& params, mcp::RpcError& error) const;
  /// `revision` is the one the call is served under (the session's, or the request's own).
  boost::asio::awaitable<std::optional<boost::json::object>> call_tool(const boost::json::object& params,
                                                                       std::string_view revision,
                                                                       const McpMessage& parsed, mcp::RpcError& refused,
                                                                       const Output& out);
  static void log(const std::string& text);
  /// Answers `error` to the request `raw_id`; without an id, logs it and answers it only
  /// where the negotiated revision allows an error without an id.
  void refuse(const std::optional<std::string>& raw_id, const mcp::RpcError& error, const Output& out) const;
  void cancel(const std::string& key);
  void cancel_all();
  void spawn(std::shared_ptr<McpMessage> parsed, std::shared_ptr<Serving> serving);
  void dispatch(const std::shared_ptr<Serving>& serving);
  void drop_pending(const std::string& key);

  ToolRegistry& tools_;
  McpServerInfo info_;
  McpToolCatalog catalog_;
  std::chrono::milliseconds progress_interval_;
  std::optional<std::string> protocol_version_;              // set by a successful initialize
  bool modern_seen_ = false;                                 // a request named a modern revision
  std::map<std::string, std::shared_ptr<Request>> running_;  // requests under way, by id key
  std::set<std::shared_ptr<Request>> live_;                  // every line being handled by serve()
  LineReader* reader_ = nullptr;                             // while serve() runs
  std::shared_ptr<Serving> serving_;                         // while serve() runs
  bool stopped_ = false;
};

}  // namespace deskd::tools
