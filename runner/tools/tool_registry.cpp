#include "runner/tools/tool_registry.h"

#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/object.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <exception>
#include <string>

#include "base/exception_text.h"

namespace deskd::tools {

bool ToolRegistry::add(std::unique_ptr<Tool> tool) {
  if (tool == nullptr || find(tool->name()) != nullptr) return false;
  tools_.push_back(std::move(tool));
  return true;
}

Tool* ToolRegistry::find(std::string_view name) const {
  for (const auto& tool : tools_) {
    if (tool->name() == name) return tool.get();
  }
  return nullptr;
}

Result<void> ToolRegistry::keep_only(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (find(name) != nullptr) continue;
    std::string known;
    for (const auto& tool : tools_) known += (known.empty() ? "" : ", ") + std::string(tool->name());
    return Error::make(ErrorCode::invalid_argument,
                       "There is no tool called '" + name.substr(0, 100) + "'. The tools are: " + known + ".");
  }
  std::vector<std::unique_ptr<Tool>> kept;
  for (const std::string& name : names) {
    const auto found =
        std::find_if(tools_.begin(), tools_.end(), [&](const auto& tool) { return tool && tool->name() == name; });
    if (found != tools_.end()) kept.push_back(std::move(*found));  // a name given twice is kept once
  }
  tools_ = std::move(kept);
  return success();
}

boost::asio::awaitable<ToolResult> ToolRegistry::call(std::string_view name, const boost::json::object& input) {
  if (closed_) co_return ToolResult::failure("The tools are closed: the desk has stopped.");
  Tool* tool = find(name);
  if (tool == nullptr) {
    std::string known;
    for (const auto& each : tools_) known += (known.empty() ? "" : ", ") + std::string(each->name());
    // The name is the caller's; keep a hostile one from flooding the reply.
    const std::string shown(name.substr(0, 100));
    co_return ToolResult::failure("There is no tool called '" + shown + "'. The tools are: " +
                                  (known.empty() ? "none" : known) + ".");
  }
  // Tools promise not to throw; this keeps one that breaks the promise from taking the
  // caller (a desk's turn, the MCP server) down with it. A cancelled call is no tool's
  // failure: the caller was cancelled (a /stop, deskd stopping) and must hear so at once, as
  // the cancellation itself, not as a result it might hand to the model.
  std::exception_ptr aborted;
  try {
    co_return co_await tool->call(input);
  } catch (const boost::system::system_error& error) {
    if (error.code() != boost::asio::error::operation_aborted) {
      co_return ToolResult::failure(std::string(tool->name()) + " failed: " + error.what());
    }
    aborted = std::current_exception();
  } catch (const std::exception& error) {
    co_return ToolResult::failure(std::string(tool->name()) + " failed: " + error.what());
  }
  // Only the caller's own cancellation passes: a tool whose inner wait was aborted for a
  // reason of its own has failed like any other.
  if ((co_await boost::asio::this_coro::cancellation_state).cancelled() != boost::asio::cancellation_type::none) {
    std::rethrow_exception(aborted);
  }
  co_return ToolResult::failure(std::string(tool->name()) + " failed: " + describe_exception(aborted));
}

void ToolRegistry::prepare() {
  if (closed_) return;
  for (const auto& tool : tools_) tool->prepare();
}

boost::asio::awaitable<void> ToolRegistry::close() {
  if (closed_) co_return;
  closed_ = true;
  for (const auto& tool : tools_) {
    try {
      co_await tool->close();
    } catch (const std::exception&) {
      // Closing goes on: the other tools must still release what they hold.
    }
  }
}

}  // namespace deskd::tools
