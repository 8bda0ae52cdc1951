#pragma once
// The JSON-RPC and MCP lifecycle pieces of `deskd mcp` that hold no state: error codes,
// how replies are written (ids echoed as the exact text the client sent), the answers to
// `initialize` and `server/discover`, and which revision a request speaks.
//
// Two eras (the 2026-07-28 spec's words, basic/versioning): the legacy revisions
// (2025-06-18, 2025-11-25) open a session with `initialize`; the modern one (2026-07-28)
// has no handshake: every request names its revision in
// `params._meta["io.modelcontextprotocol/protocolVersion"]`, every result carries
// `resultType` and the server's identity in `_meta`. deskd is "dual-era": it serves both on
// one stdio, each request by the era it speaks.

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
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
// 2026-07-28: the request names a revision this server does not speak (data: supported, requested).
inline constexpr int kUnsupportedProtocolVersion = -32022;

/// Legacy revisions (spoken after `initialize`), oldest first; the newest is the fallback.
inline constexpr const char* kLegacyProtocolVersions[] = {"2025-06-18", "2025-11-25"};
/// Modern revisions (spoken per request, without `initialize`).
inline constexpr const char* kModernProtocolVersions[] = {"2026-07-28"};
/// Revision dates compare as text; from this one on a revision is modern.
inline constexpr std::string_view kFirstModernVersion = "2026-07-28";
/// The first revision whose error responses may leave out the id (when it cannot be known).
inline constexpr std::string_view kFirstVersionWithIdlessErrors = "2025-11-25";
/// The first revision where arguments that break a tool's inputSchema are a tool result
/// with `isError` (SEP-1303: the model can correct itself), not a -32602 error.
inline constexpr std::string_view kFirstVersionWithToolInputErrors = "2025-11-25";
/// The request-metadata key that names a modern request's revision.
inline constexpr std::string_view kProtocolVersionMetaKey = "io.modelcontextprotocol/protocolVersion";
/// How long a client may cache tools/list and server/discover (2026-07-28's CacheableResult):
/// the tools never change while `deskd mcp` runs, but a restarted deskd may have other ones.
inline constexpr std::int64_t kCacheMilliseconds = 3'600'000;

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

/// Every revision spoken here, newest first (server/discover's supportedVersions, and the
/// `supported` of -32022 and of a refused initialize).
boost::json::array supported_versions();

/// The answer to `server/discover` (2026-07-28's DiscoverResult, a CacheableResult).
boost::json::object discover(const McpServerInfo& info);

/// `result` as a modern revision answers it: with `resultType` "complete" and the server's
/// identity in `_meta["io.modelcontextprotocol/serverInfo"]`.
boost::json::object modern_result(boost::json::object result, const McpServerInfo& info);

/// The revision a request names in its `_meta`.
struct RequestRevision {
  /// The modern revision the request is served under; nullopt: the request is legacy (no
  /// revision in `_meta`, or a legacy one: the session's `initialize` governs it).
  std::optional<std::string> modern;
};

/// Reads `params._meta`'s protocol version. A modern revision not spoken here, or anything
/// that is not a legacy revision date, is refused with -32022 (data: supported, requested);
/// a version that is not a string with -32602. Nullopt when refused.
std::optional<RequestRevision> request_revision(const boost::json::object& params, RpcError& refused);

}  // namespace mcp
}  // namespace deskd::tools
