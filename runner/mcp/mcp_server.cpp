#include "runner/mcp/mcp_server.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <deque>
#include <exception>
#include <utility>

#include "base/asio_await.h"
#include "runner/mcp/line_stream.h"
#include "runner/tools/tool_registry.h"

namespace deskd::tools {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;

// notifications/progress for the call whose token is `raw_token` (its JSON text, as sent).
std::string progress_notification(const std::string& raw_token, std::uint64_t progress, const std::string& message) {
  return R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" + raw_token +
         R"(,"progress":)" + std::to_string(progress) + R"(,"message":)" + json::serialize(json::value(message)) + "}}";
}

// Tells the client every `interval` that the call is still running, so that a client which
// resets its timeout on progress keeps waiting. Ends only when cancelled (the call ended).
awaitable<void> report_progress(std::string raw_token, std::string tool, std::chrono::milliseconds interval,
                                std::function<void(std::string)> notify) {
  try {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto started = std::chrono::steady_clock::now();
    for (std::uint64_t count = 1;; ++count) {
      timer.expires_after(interval);
      auto [error] = co_await timer.async_wait(kAwait);
      if (error) co_return;
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
      notify(progress_notification(raw_token, count, tool + " is still running (" + std::to_string(seconds) + " s)."));
    }
  } catch (const std::exception&) {
    // Cancelled while resuming: the call has ended.
  }
}

}  // namespace

McpServer::McpServer(ToolRegistry& tools, McpServerInfo info, std::chrono::milliseconds progress_interval)
    : tools_(tools), info_(std::move(info)), catalog_(tools), progress_interval_(progress_interval) {}

McpServer::~McpServer() = default;

void McpServer::log(const std::string& text) { std::fprintf(stderr, "deskd mcp: %s\n", text.c_str()); }

void McpServer::refuse(const std::optional<std::string>& raw_id, const mcp::RpcError& error, const Output& out) const {
  if (raw_id) {
    out.reply(mcp::error_reply(raw_id, error));
    return;
  }
  // JSON-RPC would answer with a null id, which MCP forbids and its SDKs drop; 2025-11-25
  // and later let an error leave the id out, 2025-06-18 has no way to answer at all. A
  // client that spoke a modern revision once speaks one (it has no session to say so).
  log("refused a message whose id is unknown: " + error.message);
  if (modern_seen_ || (protocol_version_ && *protocol_version_ >= mcp::kFirstVersionWithIdlessErrors)) {
    out.reply(mcp::error_reply(std::nullopt, error));
  }
}

void McpServer::cancel(const std::string& key) {
  const auto found = running_.find(key);
  if (found == running_.end()) {
    // Still waiting for a slot, or ended already (the spec allows the race).
    drop_pending(key);
    return;
  }
  found->second->cancelled = true;
  found->second->signal.emit(asio::cancellation_type::terminal);
}

void McpServer::cancel_all() {
  const auto live = live_;  // emitting may end requests, which leave live_
  for (const auto& request : live) {
    request->cancelled = true;
    request->signal.emit(asio::cancellation_type::terminal);
  }
}

awaitable<std::optional<std::string>> McpServer::handle_message(std::string_view message) {
  std::optional<std::string> last;
  Output out{[&last](std::string line) { last = std::move(line); }, [](std::string) {}};
  co_await process(read_mcp_message(std::string(message)), std::make_shared<Request>(), out);
  co_return last;
}

awaitable<void> McpServer::process(McpMessage parsed, std::shared_ptr<Request> request, Output out) {
  if (request->cancelled) co_return;
  if (!parsed.error.empty()) {
    if (parsed.raw_id) log("refused a message: " + parsed.error);
    co_return refuse(parsed.raw_id, {mcp::kParseError, "Parse error: " + parsed.error, std::nullopt}, out);
  }
  if (parsed.value.is_array()) {
    co_return refuse(std::nullopt,
                     {mcp::kInvalidRequest, "Batches are not supported: send one message a line.", std::nullopt}, out);
  }
  if (!parsed.value.is_object()) {
    co_return refuse(std::nullopt,
                     {mcp::kInvalidRequest, "Invalid request: a message must be a JSON object.", std::nullopt}, out);
  }
  const json::object& message = parsed.value.as_object();
  const json::value* id = message.if_contains("id");
  const json::value* version = message.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() || version->as_string() != "2.0") {
    co_return refuse(parsed.raw_id, {mcp::kInvalidRequest, "Invalid request: 'jsonrpc' must be \"2.0\".", std::nullopt},
                     out);
  }
  const json::value* method = message.if_contains("method");
  if (method == nullptr) {
    // A response to a request of ours; this server sends none, so there is nothing to do.
    if (id != nullptr && (message.contains("result") || message.contains("error"))) co_return;
    co_return refuse(parsed.raw_id,
                     {mcp::kInvalidRequest, "Invalid request: it needs a string 'method'.", std::nullopt}, out);
  }
  if (!method->is_string()) {
    co_return refuse(parsed.raw_id, {mcp::kInvalidRequest, "Invalid request: 'method' must be a string.", std::nullopt},
                     out);
  }
  if (id != nullptr && !parsed.raw_id) {
    co_return refuse(std::nullopt,
                     {mcp::kInvalidRequest, "Invalid request: 'id' must be a string or a number.", std::nullopt}, out);
  }
  const json::value* params = message.if_contains("params");
  if (params != nullptr && !params->is_null() && !params->is_object() && !params->is_array()) {
    co_return refuse(parsed.raw_id,
                     {mcp::kInvalidRequest, "Invalid request: 'params' must be an object.", std::nullopt}, out);
  }
  if (id == nullptr) {
    // Notifications are never answered; a cancellation stops the request it names.
    if (method->as_string() == "notifications/cancelled" && parsed.raw_request_id) {
      cancel(request_id_key(*parsed.raw_request_id));
    }
    co_return;
  }
  co_await run_request(parsed, std::move(request), std::move(out));
}

awaitable<void> McpServer::run_request(const McpMessage& parsed, std::shared_ptr<Request> request, Output out) {
  const json::object& message = parsed.value.as_object();
  const std::string& raw_id = *parsed.raw_id;
  const std::string key = request_id_key(raw_id);
  if (running_.contains(key)) {
    co_return refuse(
        raw_id,
        {mcp::kInvalidRequest, "Invalid request: id " + mcp::shown(raw_id) + " belongs to a request still under way.",
         std::nullopt},
        out);
  }
  running_.emplace(key, request);
  struct Leave {
    std::map<std::string, std::shared_ptr<Request>>& running;
    const std::string& key;
    ~Leave() { running.erase(key); }
  } leave{running_, key};

  const std::string_view name = message.at("method").as_string();
  static const json::object no_params;
  const json::value* params = message.if_contains("params");
  if (params != nullptr && params->is_array()) {
    co_return refuse(
        raw_id, {mcp::kInvalidParams, "Invalid params: " + mcp::shown(name) + " takes an object.", std::nullopt}, out);
  }
  const json::object& arguments = params != nullptr && params->is_object() ? params->as_object() : no_params;

  std::optional<json::object> result;
  mcp::RpcError error{mcp::kInternalError, "Internal error.", std::nullopt};
  try {
    // initialize is the legacy handshake whatever its _meta says; anything else speaks the
    // revision its _meta names, when that is a modern one.
    std::optional<mcp::RequestRevision> revision =
        name == "initialize" ? std::optional(mcp::RequestRevision{}) : mcp::request_revision(arguments, error);
    if (!revision) {
      // Refused as `error` says.
    } else if (revision->modern) {
      modern_seen_ = true;
      result = co_await run_modern(name, arguments, *revision->modern, parsed, error, out);
      if (result) result = mcp::modern_result(std::move(*result), info_);
    } else {
      result = co_await run_legacy(name, arguments, parsed, error, out);
    }
  } catch (const std::exception& thrown) {
    result.reset();
    error = {mcp::kInternalError, std::string("Internal error: ") + thrown.what(), std::nullopt};
  }
  // A cancelled request is not answered: the client has forgotten it, and a late reply
  // would only confuse it.
  if (request->cancelled) co_return;
  if (result)
    out.reply(mcp::result_reply(raw_id, *result));
  else
    refuse(raw_id, error, out);
}

awaitable<std::optional<json::object>> McpServer::run_legacy(std::string_view name, const json::object& arguments,
                                                             const McpMessage& parsed, mcp::RpcError& error,
                                                             const Output& out) {
  if (name == "initialize") {
    if (protocol_version_) {
      error = {mcp::kInvalidRequest,
               "Invalid request: the session is already initialized (protocol version " + *protocol_version_ + ").",
               std::nullopt};
      co_return std::nullopt;
    }
    auto initialized = mcp::initialize(arguments, info_, error);
    if (!initialized) co_return std::nullopt;
    if (!initialized->client_version_spoken) {
      log("the client asked initialize for protocol version " +
          mcp::shown(arguments.at("protocolVersion").as_string(), 20) +
          ", which deskd does not speak there (it speaks 2025-06-18 and 2025-11-25 after initialize); answered " +
          initialized->protocol_version + ": a client that cannot speak it should disconnect.");
    }
    protocol_version_ = initialized->protocol_version;
    co_return std::move(initialized->result);
  }
  if (name == "ping") co_return json::object{};
  // Answered without a revision too: a client may probe before it knows which era it meets.
  if (name == "server/discover") co_return mcp::discover(info_);
  if (!protocol_version_) {
    error = {mcp::kInvalidRequest,
             "Invalid request: send initialize first (until then only ping is answered), or name a modern revision "
             "in every request's _meta[\"" +
                 std::string(mcp::kProtocolVersionMetaKey) + "\"] (\"" + mcp::kModernProtocolVersions[0] + "\").",
             std::nullopt};
    co_return std::nullopt;
  }
  if (name == "tools/list") co_return list_tools(arguments, error);
  if (name == "tools/call") co_return co_await call_tool(arguments, *protocol_version_, parsed, error, out);
  error = {mcp::kMethodNotFound, "Method not found: " + mcp::shown(name) + ".", std::nullopt};
  co_return std::nullopt;
}

awaitable<std::optional<json::object>> McpServer::run_modern(std::string_view name, const json::object& arguments,
                                                             const std::string& revision, const McpMessage& parsed,
                                                             mcp::RpcError& error, const Output& out) {
  // Stateless (2026-07-28): nothing of an earlier request, an initialize included, counts.
  // ping is gone from this revision, and so is initialize.
  if (name == "server/discover") co_return mcp::discover(info_);
  if (name == "tools/list") {
    auto listed = list_tools(arguments, error);
    if (listed) {
      (*listed)["ttlMs"] = mcp::kCacheMilliseconds;
      (*listed)["cacheScope"] = "private";
    }
    co_return listed;
  }
  if (name == "tools/call") co_return co_await call_tool(arguments, revision, parsed, error, out);
  error = {mcp::kMethodNotFound,
           "Method not found: " + mcp::shown(name) + " (under protocol version " + revision + ").", std::nullopt};
  co_return std::nullopt;
}

std::optional<json::object> McpServer::list_tools(const json::object& params, mcp::RpcError& error) const {
  if (const auto* cursor = params.if_contains("cursor"); cursor != nullptr && !cursor->is_null()) {
    error = {mcp::kInvalidParams, "Unknown cursor: tools/list returns every tool at once.", std::nullopt};
    return std::nullopt;
  }
  return json::object{{"tools", catalog_.listing()}};
}

awaitable<std::optional<json::object>> McpServer::call_tool(const json::object& params, std::string_view revision,
                                                            const McpMessage& parsed, mcp::RpcError& refused,
                                                            const Output& out) {
  const auto* name = params.if_contains("name");
  if (name == nullptr || !name->is_string()) {
    refused = {mcp::kInvalidParams, "Invalid params: tools/call needs a string 'name'.", std::nullopt};
    co_return std::nullopt;
  }
  static const json::object no_arguments;
  const json::object* arguments = &no_arguments;
  if (const auto* given = params.if_contains("arguments"); given != nullptr && !given->is_null()) {
    if (!given->is_object()) {
      refused = {mcp::kInvalidParams, "Invalid params: tools/call needs 'arguments' to be an object.", std::nullopt};
      co_return std::nullopt;
    }
    arguments = &given->as_object();
  }
  if (catalog_.find(name->as_string(), refused) == nullptr) co_return std::nullopt;
  if (auto problem = catalog_.argument_problem(name->as_string(), *arguments)) {
    // SEP-1303: from 2025-11-25 on, arguments the schema refuses are the tool's error, told
    // to the model so that it can correct the call; before, a protocol error.
    if (revision >= mcp::kFirstVersionWithToolInputErrors)
      co_return McpToolCatalog::call_result(ToolResult::failure(*problem));
    refused = {mcp::kInvalidParams, std::move(*problem), std::nullopt};
    co_return std::nullopt;
  }

  if (!parsed.raw_progress_token)
    co_return McpToolCatalog::call_result(co_await tools_.call(name->as_string(), *arguments));
  // The call and the progress reports run side by side; whichever ends first ends the other,
  // and both have ended when this returns (a cancelled command is stopped by then).
  auto ended = co_await (
      tools_.call(name->as_string(), *arguments) ||
      report_progress(*parsed.raw_progress_token, std::string(name->as_string()), progress_interval_, out.notify));
  if (ended.index() != 0) {
    refused = {mcp::kInternalError, "Internal error: the call ended without a result.", std::nullopt};
    co_return std::nullopt;
  }
  co_return McpToolCatalog::call_result(std::get<0>(std::move(ended)));
}

}  // namespace deskd::tools
