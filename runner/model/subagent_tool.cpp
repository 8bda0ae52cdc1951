#include "runner/model/subagent_tool.h"

#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>

#include "base/exception_text.h"
#include "runner/desk/subagent_board.h"
#include "runner/events/event_kinds.h"
#include "runner/model/model_turn_runner.h"
#include "runner/tools/tool_input.h"
#include "runner/tools/tool_registry.h"

namespace deskd::model {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

namespace {

constexpr std::string_view kDescription =
    "Hands a bounded task to a helper (a subagent) and returns its final answer. The subagent is a separate model "
    "turn: it sees only the task you write (make it complete), has its own terminal and file tools in a sandbox "
    "like yours, with the same folder and the same limits, and stops at its budget of model calls (max_turns) and "
    "tokens (max_tokens). Call it several times in one reply to run several subagents at once; the desk allows a "
    "few at a time. Name `tools` to give it fewer tools than yours.";

constexpr std::string_view kSchema = R"({
  "type": "object",
  "properties": {
    "task": {"type": "string", "description": "The whole task, as the subagent's only instructions."},
    "tools": {"type": "array", "items": {"type": "string"}, "description": "Only these of your tools (default: all but start_subagent)."},
    "max_turns": {"type": "integer", "minimum": 1, "description": "The most model calls it may make."},
    "max_tokens": {"type": "integer", "minimum": 1, "description": "The most tokens its model calls may use."}
  },
  "required": ["task"],
  "additionalProperties": false
})";

// What a subagent's turn reaches of its desk: events go out under the desk with the
// subagent's id; steering is for the desk's own turn, never a subagent's.
class SubagentContext final : public desk::TurnContext {
 public:
  SubagentContext(const desk::SubagentBoard& board, std::string id) : board_(board), id_(std::move(id)) {}
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string& kind, json::object data) override {
    // Only the table's kinds reach here (ModelTurnRunner publishes by constant).
    const auto row = desk::find_event_kind(kind);
    if (row) board_.publish(id_, kind.c_str(), std::move(data));
  }
  void progress() override { board_.progress(); }

 private:
  const desk::SubagentBoard& board_;
  std::string id_;
};

struct Request {
  std::string task;
  std::vector<std::string> tools;
  std::uint64_t turns = 0;
  std::uint64_t tokens = 0;
};

Result<Request> read_request(const json::object& input, const SubagentSettings& settings) {
  const tools::ToolInput fields(StartSubagentTool::kName, input);
  Request request;
  DESKD_ASSIGN_OR_RETURN(request.task, fields.required_string("task"));
  if (request.task.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Error::make(ErrorCode::invalid_argument, "start_subagent needs a task that says what to do.");
  }
  if (request.task.size() > settings.maximum_task_characters) {
    return Error::make(ErrorCode::invalid_argument, "The task is longer than " +
                                                        std::to_string(settings.maximum_task_characters) +
                                                        " characters; write it shorter or put the details in a file.");
  }
  if (const json::value* names = input.if_contains("tools"); names != nullptr && !names->is_null()) {
    if (!names->is_array() || names->as_array().size() > 64) {
      return Error::make(ErrorCode::invalid_argument, "start_subagent's 'tools' must be a list of tool names.");
    }
    for (const json::value& name : names->as_array()) {
      if (!name.is_string())
        return Error::make(ErrorCode::invalid_argument, "start_subagent's 'tools' must be a list of tool names.");
      if (name.as_string() == StartSubagentTool::kName) {
        return Error::make(ErrorCode::refused, "A subagent may not start subagents of its own.");
      }
      request.tools.emplace_back(name.as_string());
    }
  }
  DESKD_ASSIGN_OR_RETURN(auto turns, fields.optional_count("max_turns"));
  DESKD_ASSIGN_OR_RETURN(auto tokens, fields.optional_count("max_tokens"));
  request.turns = std::min(turns.value_or(settings.default_turns), settings.maximum_turns);
  request.tokens = std::min(tokens.value_or(settings.default_tokens), settings.maximum_tokens);
  return request;
}

}  // namespace

StartSubagentTool::StartSubagentTool(std::shared_ptr<desk::SubagentBoard> board, MakeProvider make_provider,
                                     MakeTools make_tools, desk::UsageTracker* usage, desk::BudgetKeeper* budget,
                                     const Clock& clock, SubagentSettings settings)
    : board_(std::move(board)),
      make_provider_(std::move(make_provider)),
      make_tools_(std::move(make_tools)),
      usage_(usage),
      budget_(budget),
      clock_(clock),
      settings_(std::move(settings)) {}

std::string_view StartSubagentTool::description() const { return kDescription; }
std::string_view StartSubagentTool::input_schema() const { return kSchema; }

awaitable<tools::ToolResult> StartSubagentTool::call(const json::object& input) {
  auto request = read_request(input, settings_);
  if (!request.ok()) co_return tools::ToolResult::failure(request.error().what);
  auto id = board_->start(request->task, clock_.now());
  if (!id.ok()) co_return tools::ToolResult::failure(id.error().what);
  const auto give_up = [&](const std::string& why) {
    board_->end(*id, "failed");
    board_->publish(*id, desk::event_kind::kSubagentFinished, {{"state", "failed"}, {"error", why}});
    return tools::ToolResult::failure("Subagent " + *id + " could not start: " + why);
  };
  auto tools = make_tools_(request->tools);
  if (!tools.ok()) co_return give_up(tools.error().what);
  auto provider = make_provider_(request->task);
  if (!provider.ok()) co_return give_up(provider.error().what);

  TurnRunnerSettings runner_settings;
  runner_settings.system_prompt = settings_.system_prompt;
  runner_settings.maximum_tool_rounds = static_cast<int>(request->turns);
  runner_settings.maximum_tokens = request->tokens;
  ModelTurnRunner runner(*provider, *tools, runner_settings, nullptr, usage_, budget_);
  SubagentContext context(*board_, *id);
  json::array tool_names;
  for (const auto& tool : (*tools)->tools()) tool_names.emplace_back(tool->name());
  board_->publish(*id, desk::event_kind::kSubagentStarted,
                  {{"task", request->task},
                   {"tools", std::move(tool_names)},
                   {"max_turns", request->turns},
                   {"max_tokens", request->tokens}});

  std::string reply;
  std::exception_ptr failure;
  try {
    reply = (co_await runner.run_turn(request->task, context)).reply;
  } catch (...) {
    failure = std::current_exception();
  }
  // Its own coroutine (the tool round runs each subagent in one): clearing a /stop here
  // lets its tools close — its sandbox gone — before the call ends.
  const bool stopped = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
  co_await asio::this_coro::reset_cancellation_state();
  co_await runner.close();
  co_await (*tools)->close();

  board_->update(*id, runner.requests(), runner.tokens());
  const std::string state = stopped ? "stopped" : failure ? "failed" : "finished";
  board_->end(*id, state);
  json::object finished{{"state", state}, {"turns", runner.requests()}, {"tokens", runner.tokens()}};
  if (failure)
    finished["error"] = stopped ? std::string("stopped with the turn") : describe_exception(failure);
  else
    finished["reply"] = reply;
  board_->publish(*id, desk::event_kind::kSubagentFinished, std::move(finished));
  const std::string counts =
      " (" + std::to_string(runner.requests()) + " model calls, " + std::to_string(runner.tokens()) + " tokens)";
  if (stopped) co_return tools::ToolResult::failure("Subagent " + *id + " was stopped with the turn" + counts + ".");
  if (failure)
    co_return tools::ToolResult::failure("Subagent " + *id + " failed: " + describe_exception(failure) + counts);
  co_return tools::ToolResult::success("Subagent " + *id + " answered" + counts + ":\n" + reply);
}

}  // namespace deskd::model
