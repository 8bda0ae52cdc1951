#pragma once
// One round of a turn's tool calls. Calls run one after another, in the model's order,
// except a run of calls to tools that may run beside each other (subagents): those run at
// once, and the round waits for all of them. A cancelled round (a /stop) cancels each call
// still running, waits for it to end, then ends with operation_aborted.

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "runner/model/model_provider.h"
#include "runner/tools/tool.h"

namespace deskd::tools {
class ToolRegistry;
}

namespace deskd::model {

/// Told as each call starts (index into `calls`) and as it ends, with its result.
struct ToolRoundWatch {
  std::function<void(std::size_t)> started;
  std::function<void(std::size_t, const tools::ToolResult&)> finished;
};

/// The results of `calls`, in their order. `registry` may be null ("no tools" results).
/// `calls` must stay alive until the round is over.
boost::asio::awaitable<std::vector<tools::ToolResult>> run_tool_round(std::shared_ptr<tools::ToolRegistry> registry,
                                                                      std::span<const ToolCall> calls,
                                                                      const ToolRoundWatch& watch);

}  // namespace deskd::model
