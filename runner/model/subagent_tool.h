#pragma once
// start_subagent: the desk's model hands a bounded task to a helper. The helper is a
// separate model turn with its own session (it sees only the task), its own tools — a fresh
// set from the desk's own settings, so its bash is a second sandbox built from the same
// Confinement and SandboxSpec, never with more rights — and a budget of model calls and
// tokens. Its final answer is the tool's result. Several run at once (one model reply may
// start many) up to the desk's limit; a /stop of the turn stops them; their usage counts in
// the desk's usage; their events are the desk's, with the subagent's id (SubagentBoard).

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "runner/model/model_provider.h"
#include "runner/tools/tool.h"

namespace deskd::desk {
class BudgetKeeper;
class SubagentBoard;
class UsageTracker;
}  // namespace deskd::desk
namespace deskd::tools {
class ToolRegistry;
}

namespace deskd::model {

struct SubagentSettings {
  /// What the subagents are told of their place; the task follows as the first message.
  std::string system_prompt;
  /// The budget when the call names none, and the most it may ask for.
  std::uint64_t default_turns = 20;
  std::uint64_t maximum_turns = 100;
  std::uint64_t default_tokens = 200000;
  std::uint64_t maximum_tokens = 2000000;
  /// The most characters a task may have.
  std::size_t maximum_task_characters = 20000;
};

class StartSubagentTool final : public tools::Tool {
 public:
  static constexpr std::string_view kName = "start_subagent";

  /// The model a subagent asks, for its task (the script model finds the subagent's lines
  /// by task).
  using MakeProvider = std::function<Result<std::shared_ptr<ModelProvider>>(const std::string& task)>;
  /// A fresh tool set for a subagent, without start_subagent; only the named tools when
  /// `names` is not empty (an unknown name is refused).
  using MakeTools = std::function<Result<std::shared_ptr<tools::ToolRegistry>>(const std::vector<std::string>& names)>;

  /// `usage` and `budget` (both may be null) are the desk's: a subagent's calls count in
  /// its usage and are held by its spend caps; a call the budget refuses ends the subagent
  /// with an error that says so.
  StartSubagentTool(std::shared_ptr<desk::SubagentBoard> board, MakeProvider make_provider, MakeTools make_tools,
                    desk::UsageTracker* usage, desk::BudgetKeeper* budget, const Clock& clock,
                    SubagentSettings settings);

  std::string_view name() const override { return kName; }
  std::string_view description() const override;
  std::string_view input_schema() const override;
  tools::ToolReach reach() const override { return tools::ToolReach::delegates; }
  bool runs_beside_others() const override { return true; }
  /// Runs the subagent to its end. A cancelled call (a /stop) stops it, closes its tools and
  /// returns an error result saying so.
  boost::asio::awaitable<tools::ToolResult> call(const boost::json::object& input) override;

 private:
  std::shared_ptr<desk::SubagentBoard> board_;
  MakeProvider make_provider_;
  MakeTools make_tools_;
  desk::UsageTracker* usage_;
  desk::BudgetKeeper* budget_;
  const Clock& clock_;
  SubagentSettings settings_;
};

}  // namespace deskd::model
