#include "runner/tools/mcp_server.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <exception>
#include <variant>

#include "runner/tools/line_stream.h"
#include "runner/tools/json_text.h"
#include "runner/tools/tool_registry.h"
#include "runner/tools/utf8_text.h"

namespace deskd::tools {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

// JSON-RPC 2.0's error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;

struct RpcError {
  int code;
  std::string message;
};
using MethodOutcome = std::variant<json::object, RpcError>;

std::string error_reply(const json::value& id, int code, std::string_view message) {
  json::object error{{"code", code}, {"message", message}};
  return json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}});
}

// A client's string echoed in a message, kept short (it is valid UTF-8: it was parsed).
std::string shown(std::string_view text) {
  const std::string_view prefix = utf8_prefix(text, 100);
  return std::string(prefix) + (prefix.size() < text.size() ? "..." : "");
}

json::object server_info(const McpServerInfo& info) { return {{"name", info.name}, {"version", info.version}}; }

json::object capabilities() { return {{"tools", json::object{{"listChanged", false}}}}; }

MethodOutcome initialize(const json::object& params, const McpServerInfo& info) {
  const auto* requested = params.if_contains("protocolVersion");
  if (requested == nullptr || !requested->is_string()) {
    return RpcError{kInvalidParams, "initialize needs a string 'protocolVersion'."};
  }
  // The client's version when we speak it, otherwise our newest: the client then decides
  // whether it can go on.
  std::string_view chosen = std::end(McpServer::kProtocolVersions)[-1];
  for (const char* version : McpServer::kProtocolVersions) {
    if (requested->as_string() == version) chosen = version;
  }
  return json::object{
      {"protocolVersion", chosen}, {"capabilities", capabilities()}, {"serverInfo", server_info(info)}};
}

MethodOutcome discover(const McpServerInfo& info) {
  json::array versions;
  for (const char* version : McpServer::kProtocolVersions) versions.emplace_back(version);
  // The 2026-07-28 schema carries serverInfo in _meta; its drafts had it at the top level.
  return json::object{{"resultType", "complete"},
                      {"supportedVersions", std::move(versions)},
                      {"capabilities", capabilities()},
                      {"serverInfo", server_info(info)},
                      {"_meta", json::object{{"io.modelcontextprotocol/serverInfo", server_info(info)}}}};
}

MethodOutcome list_tools(const json::object& params, const ToolRegistry& tools) {
  if (const auto* cursor = params.if_contains("cursor"); cursor != nullptr && !cursor->is_null()) {
    return RpcError{kInvalidParams, "Unknown cursor: tools/list returns every tool at once."};
  }
  json::array listed;
  for (const auto& tool : tools.tools()) {
    std::error_code error;
    json::value schema = json::parse(tool->input_schema(), error);
    if (error || !schema.is_object()) {
      std::fprintf(stderr, "deskd mcp: the input schema of %.*s is not a JSON object\n",
                   static_cast<int>(tool->name().size()), tool->name().data());
      schema = json::object{{"type", "object"}};
    }
    listed.emplace_back(json::object{
        {"name", tool->name()}, {"description", tool->description()}, {"inputSchema", std::move(schema)}});
  }
  return json::object{{"tools", std::move(listed)}};
}

awaitable<MethodOutcome> call_tool(const json::object& params, ToolRegistry& tools) {
  const auto* name = params.if_contains("name");
  if (name == nullptr || !name->is_string()) co_return RpcError{kInvalidParams, "tools/call needs a string 'name'."};
  static const json::object no_arguments;
  const json::object* arguments = &no_arguments;
  if (const auto* given = params.if_contains("arguments"); given != nullptr && !given->is_null()) {
    if (!given->is_object()) co_return RpcError{kInvalidParams, "tools/call needs 'arguments' to be an object."};
    arguments = &given->as_object();
  }
  // An unknown tool is the registry's error result, which names the tools there are.
  ToolResult result = co_await tools.call(name->as_string(), *arguments);
  json::array content{json::object{{"type", "text"}, {"text", valid_utf8(std::move(result.text))}}};
  co_return json::object{{"content", std::move(content)}, {"isError", result.is_error}};
}

}  // namespace

McpServer::McpServer(ToolRegistry& tools, McpServerInfo info) : tools_(tools), info_(std::move(info)) {}

McpServer::~McpServer() = default;

awaitable<std::optional<std::string>> McpServer::handle_message(std::string_view message) {
  std::error_code parse_error;
  json::parse_options options;
  options.max_depth = 64;
  json::value parsed = json::parse(message, parse_error, {}, options);
  if (parse_error) co_return error_reply(nullptr, kParseError, "Parse error: " + parse_error.message() + ".");
  if (parsed.is_array()) {
    co_return error_reply(nullptr, kInvalidRequest, "Batches are not supported: send one message a line.");
  }
  if (!parsed.is_object()) co_return error_reply(nullptr, kInvalidRequest, "A message must be a JSON object.");
  const json::object& request = parsed.as_object();

  const json::value* id = request.if_contains("id");
  const bool id_valid = id != nullptr && (id->is_string() || id->is_number());
  const json::value reply_id = id_valid ? *id : json::value(nullptr);
  const json::value* version = request.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() || version->as_string() != "2.0") {
    co_return error_reply(reply_id, kInvalidRequest, "Invalid request: 'jsonrpc' must be \"2.0\".");
  }
  const json::value* method = request.if_contains("method");
  if (method == nullptr) {
    // A response to a request of ours; this server sends none, so there is nothing to do.
    if (id != nullptr && (request.contains("result") || request.contains("error"))) co_return std::nullopt;
    co_return error_reply(reply_id, kInvalidRequest, "Invalid request: it needs a string 'method'.");
  }
  if (!method->is_string()) co_return error_reply(reply_id, kInvalidRequest, "Invalid request: 'method' must be a string.");
  if (id != nullptr && !id_valid) {
    co_return error_reply(nullptr, kInvalidRequest, "Invalid request: 'id' must be a string or a number.");
  }
  const json::value* params = request.if_contains("params");
  if (params != nullptr && !params->is_null() && !params->is_object() && !params->is_array()) {
    co_return error_reply(reply_id, kInvalidRequest, "Invalid request: 'params' must be an object.");
  }
  // Notifications (initialized, cancelled, anything else) are never answered. A
  // cancellation is not acted on: the bash session runs its commands one at a time and a
  // command ends by itself or at its timeout.
  if (id == nullptr) co_return std::nullopt;

  const std::string_view name = method->as_string();
  static const json::object no_params;
  if (params != nullptr && params->is_array()) {
    co_return error_reply(reply_id, kInvalidParams, "Invalid params: " + shown(name) + " takes an object.");
  }
  const json::object& arguments = params != nullptr && params->is_object() ? params->as_object() : no_params;

  try {
    MethodOutcome outcome;
    if (name == "initialize") outcome = initialize(arguments, info_);
    else if (name == "server/discover") outcome = discover(info_);
    else if (name == "ping") outcome = json::object{};
    else if (name == "tools/list") outcome = list_tools(arguments, tools_);
    else if (name == "tools/call") outcome = co_await call_tool(arguments, tools_);
    else outcome = RpcError{kMethodNotFound, "Method not found: " + shown(name) + "."};

    if (auto* error = std::get_if<RpcError>(&outcome)) co_return error_reply(reply_id, error->code, error->message);
    co_return json::serialize(json::object{
        {"jsonrpc", "2.0"}, {"id", reply_id}, {"result", std::move(std::get<json::object>(outcome))}});
  } catch (const std::exception& error) {
    co_return error_reply(reply_id, kInternalError, std::string("Internal error: ") + error.what());
  }
}

awaitable<bool> McpServer::serve(asio::any_io_executor executor, UniqueFd input, UniqueFd output) {
  LineReader reader(executor, std::move(input), kMaximumMessageBytes);
  LineWriter writer(executor, std::move(output));
  reader_ = &reader;
  if (stopped_) reader.cancel();

  // Woken whenever a request ends, for the limit on requests under way and for the end.
  asio::steady_timer request_ended(executor, asio::steady_timer::time_point::max());
  std::size_t in_flight = 0;
  while (!writer.failed()) {
    while (in_flight >= kMaximumRequestsInFlight) co_await request_ended.async_wait(kAwait);
    std::optional<LineReader::Line> line = co_await reader.read_line();
    if (!line) break;
    if (line->too_long) {
      writer.write_line(error_reply(nullptr, kParseError,
                                    "Parse error: the message is longer than " +
                                        std::to_string(kMaximumMessageBytes) + " bytes."));
      continue;
    }
    if (line->text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
    ++in_flight;
    auto handle = [this, &writer, &in_flight, &request_ended, text = std::move(line->text)]() -> awaitable<void> {
      try {
        std::optional<std::string> reply = co_await handle_message(text);
        if (reply) writer.write_line(std::move(*reply));
      } catch (const std::exception& error) {
        std::fprintf(stderr, "deskd mcp: a request failed: %s\n", error.what());
      } catch (...) {
        std::fprintf(stderr, "deskd mcp: a request failed\n");
      }
      // Always counted down, or serve() would wait for this request forever.
      --in_flight;
      request_ended.cancel();
    };
    asio::co_spawn(executor, std::move(handle), [](std::exception_ptr escaped) {
      if (escaped) std::fputs("deskd mcp: a request ended with an exception\n", stderr);
    });
  }
  while (in_flight > 0) co_await request_ended.async_wait(kAwait);
  reader_ = nullptr;
  co_return co_await writer.flush();
}

void McpServer::stop() {
  stopped_ = true;
  if (reader_ != nullptr) reader_->cancel();
}

}  // namespace deskd::tools
