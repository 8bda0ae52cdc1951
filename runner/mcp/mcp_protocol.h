#pragma once
// The JSON-RPC and MCP lifecycle pieces of `deskd mcp` that hold no state: error codes,
// how replies are written (ids echoed as the exact text the client sent), and the answers
// to `initialize` and `server/discover`.

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace deskd::tools {

/// Who the server says it is.
struct McpServerInfo {
  std::string name = "deskd";
  std::string version = "0";
};

namespace mcp {

// JSON-RPC 2.0's error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

/// Protocol versions this server speaks, oldest first; the newest is the fallback.
inline constexpr const char* kProtocolVersions[] = {"2025-06-18", "2025-11-25"};
/// The first revision whose error responses may leave out the id (when it cannot be known).
inline constexpr std::string_view kFirstVersionWithIdlessErrors = "2025-11-25";

struct RpcError {
  int code;
  std::string message;
  std::optional<boost::json::object> data;
};

/// `{"jsonrpc":"2.0","id":<raw_id>,"result":...}`; `raw_id` is the id's JSON text.
std::string result_reply(const std::string& raw_id, const boost::json::object& result);
/// An error response; without `raw_id` the id is left out (never null: MCP has no null id).
std::string error_reply(const std::optional<std::string>& raw_id, const RpcError& error);
/// `{"jsonrpc":"2.0","method":...,"params":...}`.
std::string notification(std::string_view method, const boost::json::object& params);

/// A client's string shown in a message, kept short (`text` is valid UTF-8).
std::string shown(std::string_view text, std::size_t maximum_bytes = 100);

/// What `initialize` answers.
struct Initialized {
  boost::json::object result;    ///< The InitializeResult.
  std::string protocol_version;  ///< The version the session now speaks.
  bool client_version_spoken;    ///< False: the client asked for one this server lacks.
};

/// The answer to `initialize`: the client's version when spoken here, otherwise the newest
/// (the client decides whether it can go on, as the spec says). A protocolVersion that is
/// missing, not a string, or not a revision date at all is refused (-32602), with the
/// versions spoken here in its data, as the lifecycle spec's example error does.
std::optional<Initialized> initialize(const boost::json::object& params, const McpServerInfo& info, RpcError& refused);

/// The answer to `server/discover` (the 2026-07-28 draft's handshake without a session).
boost::json::object discover(const McpServerInfo& info);

}  // namespace mcp
}  // namespace deskd::tools
