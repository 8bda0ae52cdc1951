#include "runner/mcp/mcp_server.h"

#include <sys/stat.h>

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
void log_line(const std::string& text) { std::fprintf(stderr, "deskd mcp: %s\n", text.c_str()); }

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

bool is_regular_file(int fd) {
  struct stat status {};
  return ::fstat(fd, &status) == 0 && S_ISREG(status.st_mode);
}

}  // namespace

struct McpServer::Request {
  asio::cancellation_signal signal;  // bound to the coroutine that handles the line
  bool cancelled = false;            // the client no longer wants the answer
};

McpServer::McpServer(ToolRegistry& tools, McpServerInfo info, std::chrono::milliseconds progress_interval)
    : tools_(tools), info_(std::move(info)), catalog_(tools), progress_interval_(progress_interval) {}

McpServer::~McpServer() = default;

void McpServer::refuse(const std::optional<std::string>& raw_id, const mcp::RpcError& error, const Output& out) const {
  if (raw_id) {
    out.reply(mcp::error_reply(raw_id, error));
    return;
  }
  // JSON-RPC would answer with a null id, which MCP forbids and its SDKs drop; 2025-11-25
  // lets an error leave the id out, 2025-06-18 has no way to answer at all.
  log_line("refused a message whose id is unknown: " + error.message);
  if (protocol_version_ && *protocol_version_ >= mcp::kFirstVersionWithIdlessErrors) {
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
    if (parsed.raw_id) log_line("refused a message: " + parsed.error);
    co_return refuse(parsed.raw_id, {mcp::kParseError, "Parse error: " + parsed.error, std::nullopt}, out);
  }
  if (parsed.value.is_array()) {
    co_return refuse(std::nullopt, {mcp::kInvalidRequest, "Batches are not supported: send one message a line.", std::nullopt}, out);
  }
  if (!parsed.value.is_object()) {
    co_return refuse(std::nullopt, {mcp::kInvalidRequest, "Invalid request: a message must be a JSON object.", std::nullopt}, out);
  }
  const json::object& message = parsed.value.as_object();
  const json::value* id = message.if_contains("id");
  const json::value* version = message.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() || version->as_string() != "2.0") {
    co_return refuse(parsed.raw_id, {mcp::kInvalidRequest, "Invalid request: 'jsonrpc' must be \"2.0\".", std::nullopt}, out);
  }
  const json::value* method = message.if_contains("method");
  if (method == nullptr) {
    // A response to a request of ours; this server sends none, so there is nothing to do.
    if (id != nullptr && (message.contains("result") || message.contains("error"))) co_return;
    co_return refuse(parsed.raw_id, {mcp::kInvalidRequest, "Invalid request: it needs a string 'method'.", std::nullopt}, out);
  }
  if (!method->is_string()) {
    co_return refuse(parsed.raw_id, {mcp::kInvalidRequest, "Invalid request: 'method' must be a string.", std::nullopt}, out);
  }
  if (id != nullptr && !parsed.raw_id) {
    co_return refuse(std::nullopt, {mcp::kInvalidRequest, "Invalid request: 'id' must be a string or a number.", std::nullopt}, out);
  }
  const json::value* params = message.if_contains("params");
  if (params != nullptr && !params->is_null() && !params->is_object() && !params->is_array()) {
    co_return refuse(parsed.raw_id, {mcp::kInvalidRequest, "Invalid request: 'params' must be an object.", std::nullopt}, out);
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
    co_return refuse(raw_id, {mcp::kInvalidRequest, "Invalid request: id " + mcp::shown(raw_id) +
                                                        " belongs to a request still under way.", std::nullopt}, out);
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
    co_return refuse(raw_id, {mcp::kInvalidParams, "Invalid params: " + mcp::shown(name) + " takes an object.", std::nullopt}, out);
  }
  const json::object& arguments = params != nullptr && params->is_object() ? params->as_object() : no_params;

  std::optional<json::object> result;
  mcp::RpcError error{mcp::kInternalError, "Internal error.", std::nullopt};
  try {
    if (name == "initialize") {
      if (protocol_version_) {
        error = {mcp::kInvalidRequest, "Invalid request: the session is already initialized (protocol version " +
                                           *protocol_version_ + ").", std::nullopt};
      } else if (auto initialized = mcp::initialize(arguments, info_, error)) {
        if (!initialized->client_version_spoken) {
          const json::value& asked = arguments.at("protocolVersion");
          log_line("the client asked for protocol version " + mcp::shown(asked.as_string(), 20) +
                   ", which deskd does not speak (it speaks 2025-06-18 and 2025-11-25); answered " +
                   initialized->protocol_version + ": a client that cannot speak it should disconnect.");
        }
        protocol_version_ = initialized->protocol_version;
        result = std::move(initialized->result);
      }
    } else if (name == "ping") {
      result = json::object{};
    } else if (name == "server/discover") {
      result = mcp::discover(info_);
    } else if (!protocol_version_) {
      error = {mcp::kInvalidRequest, "Invalid request: send initialize first; until then only ping is answered.", std::nullopt};
    } else if (name == "tools/list") {
      if (const auto* cursor = arguments.if_contains("cursor"); cursor != nullptr && !cursor->is_null()) {
        error = {mcp::kInvalidParams, "Unknown cursor: tools/list returns every tool at once.", std::nullopt};
      } else {
        result = json::object{{"tools", catalog_.listing()}};
      }
    } else if (name == "tools/call") {
      result = co_await call_tool(arguments, parsed, error, out);
    } else {
      error = {mcp::kMethodNotFound, "Method not found: " + mcp::shown(name) + ".", std::nullopt};
    }
  } catch (const std::exception& thrown) {
    result.reset();
    error = {mcp::kInternalError, std::string("Internal error: ") + thrown.what(), std::nullopt};
  }
  // A cancelled request is not answered: the client has forgotten it, and a late reply
  // would only confuse it.
  if (request->cancelled) co_return;
  if (result) out.reply(mcp::result_reply(raw_id, *result));
  else refuse(raw_id, error, out);
}

awaitable<std::optional<json::object>> McpServer::call_tool(const json::object& params, const McpMessage& parsed,
                                                            mcp::RpcError& refused, const Output& out) {
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
  if (catalog_.find_for_call(name->as_string(), *arguments, refused) == nullptr) co_return std::nullopt;

  if (!parsed.raw_progress_token) co_return McpToolCatalog::call_result(co_await tools_.call(name->as_string(), *arguments));
  // The call and the progress reports run side by side; whichever ends first ends the other,
  // and both have ended when this returns (a cancelled command is stopped by then).
  auto ended = co_await (tools_.call(name->as_string(), *arguments) ||
                         report_progress(*parsed.raw_progress_token, std::string(name->as_string()),
                                         progress_interval_, out.notify));
  if (ended.index() != 0) {
    refused = {mcp::kInternalError, "Internal error: the call ended without a result.", std::nullopt};
    co_return std::nullopt;
  }
  co_return McpToolCatalog::call_result(std::get<0>(std::move(ended)));
}

// What serve() shares with the requests it spawned.
struct McpServer::Serving {
  Serving(const asio::any_io_executor& executor_in, Output output)
      : executor(executor_in), out(std::move(output)), request_ended(executor_in, asio::steady_timer::time_point::max()) {}
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
        log_line(std::string("a request failed: ") + error.what());
      }
    } catch (const std::exception& error) {
      log_line(std::string("a request failed: ") + error.what());
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
      refuse(std::nullopt, {mcp::kParseError, "Parse error: the message is longer than " +
                                                  std::to_string(kMaximumMessageBytes) + " bytes.", std::nullopt},
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
