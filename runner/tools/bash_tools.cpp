#include "runner/tools/bash_tools.h"

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

#include "runner/tools/tool_input.h"
#include "runner/tools/tool_registry.h"

namespace deskd::tools {
namespace {

using boost::asio::awaitable;

constexpr std::string_view kCommandSchema = R"({
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command, as typed at a bash prompt."}
  },
  "required": ["command"],
  "additionalProperties": false
})";

// bash's structured result: the basic one and the exit status.
constexpr std::string_view kCommandOutputSchema = R"({"type":"object","properties":{)"
    R"("text":{"type":"string","description":"What the command printed, then a line with its exit status."},)"
    R"("exit_status":{"type":"integer","description":"The command's exit status; absent when it had none (it ran too long, or the terminal could not run it)."},)"
    R"("truncated":{"type":"boolean","description":"Whether output was left out because it was too long."},)"
    R"("is_error":{"type":"boolean","description":"Whether the call failed or was refused; the text says why."}},)"
    R"("required":["text","truncated","is_error"]})";

// The tools share the session; each holds it so that none outlives it by accident.
class SessionTool : public Tool {
 public:
  explicit SessionTool(std::shared_ptr<BashSession> session) : session_(std::move(session)) {}
  // A command can do anything the desk's sandbox allows: write (its writable places),
  // remove, and reach other machines when the sandbox shares the host's network.
  ToolEffects effects() const override {
    return ToolEffects{.read_only = false, .destructive = true, .idempotent = false, .open_world = session_->reaches_network()};
  }
  ToolReach reach() const override { return ToolReach::shell; }

 protected:
  BashSession& session() const { return *session_; }
  std::shared_ptr<BashSession> session_;
};

class BashTool final : public SessionTool {
 public:
  using SessionTool::SessionTool;
  std::string_view name() const override { return "bash"; }
  std::string_view title() const override { return "Run a command"; }
  std::string_view output_schema() const override { return kCommandOutputSchema; }
  std::string_view description() const override {
    return "Runs a command in your terminal: one long-lived bash in your desk's sandbox, starting in your "
           "desk folder. The folder, variables, functions and aliases a command sets carry over to the "
           "next command. Commands read no input (stdin is /dev/null), so nothing may wait for typing. "
           "The result is what the command printed (stdout and stderr together, shortened in the middle "
           "when very long) and a last line with its exit status. A command that runs too long restarts "
           "the terminal; start long commands with bash_background instead.";
  }
  std::string_view input_schema() const override { return kCommandSchema; }

  awaitable<ToolResult> call(const boost::json::object& input) override {
    auto command = ToolInput(name(), input).required_string("command");
    if (!command.ok()) co_return ToolResult::failure(command.error().what);
    co_return bash_result(co_await session().run(std::move(*command)));
  }

  void prepare() override { session().prepare(); }
  awaitable<void> close() override { co_await session().close(); }
};

class BashBackgroundTool final : public SessionTool {
 public:
  using SessionTool::SessionTool;
  std::string_view name() const override { return "bash_background"; }
  std::string_view title() const override { return "Start a background command"; }
  std::string_view description() const override {
    return "Starts a long command in the background, in your desk's sandbox, and returns at once with a "
           "job id. Its output goes to a log under scratch/. Check on it with check_background. "
           "Background jobs stop when the terminal restarts.";
  }
  std::string_view input_schema() const override { return kCommandSchema; }

  awaitable<ToolResult> call(const boost::json::object& input) override {
    auto command = ToolInput(name(), input).required_string("command");
    if (!command.ok()) co_return ToolResult::failure(command.error().what);
    BackgroundStart started = co_await session().run_in_background(std::move(*command));
    if (started.start.exit_status != 0) {
      ToolResult failed = bash_result(std::move(started.start));
      failed.text = "The background job could not be started:\n" + failed.text;
      failed.is_error = true;
      co_return failed;
    }
    co_return ToolResult::success("Started background job " + started.job_id +
                                  ". Check it with check_background.");
  }
};

class CheckBackgroundTool final : public SessionTool {
 public:
  using SessionTool::SessionTool;
  std::string_view name() const override { return "check_background"; }
  std::string_view title() const override { return "Check a background command"; }
  ToolEffects effects() const override {
    return ToolEffects{.read_only = true, .destructive = false, .idempotent = true, .open_world = false};
  }
  std::string_view description() const override {
    return "Says whether a background job started with bash_background is still running or has "
           "finished, followed by the last 4,000 characters of its output.";
  }
  std::string_view input_schema() const override {
    return R"({
  "type": "object",
  "properties": {
    "job_id": {"type": "string", "description": "The id bash_background returned."}
  },
  "required": ["job_id"],
  "additionalProperties": false
})";
  }

  awaitable<ToolResult> call(const boost::json::object& input) override {
    auto job_id = ToolInput(name(), input).required_string("job_id");
    if (!job_id.ok()) co_return ToolResult::failure(job_id.error().what);
    CommandOutcome outcome = co_await session().check_background(std::move(*job_id));
    // The status is that of the check, not of the job: the model is not shown it.
    const bool failed = !outcome.exit_status.has_value() || outcome.output.starts_with("no such job: ");
    co_return ToolResult{std::move(outcome.output), failed, std::nullopt, outcome.truncated, turn_ending(outcome)};
  }
};

class BashRestartTool final : public SessionTool {
 public:
  using SessionTool::SessionTool;
  std::string_view name() const override { return "bash_restart"; }
  std::string_view title() const override { return "Restart the terminal"; }
  // It ends every process of the terminal; a second restart leaves the same fresh terminal.
  ToolEffects effects() const override {
    return ToolEffects{.read_only = false, .destructive = true, .idempotent = true, .open_world = false};
  }
  std::string_view description() const override {
    return "Restarts your terminal: stops bash and everything it started (background jobs too). The "
           "next command starts a fresh terminal in your desk folder, with variables reset. Use it when "
           "the terminal is in a state you cannot fix.";
  }
  std::string_view input_schema() const override {
    return R"({"type": "object", "properties": {}, "additionalProperties": false})";
  }

  awaitable<ToolResult> call(const boost::json::object&) override {
    co_await session().restart();
    co_return ToolResult::success(
        "The terminal was restarted: the next command starts in your desk folder with variables reset, "
        "and background jobs were stopped.");
  }
};

}  // namespace

ToolResult bash_result(CommandOutcome outcome) {
  std::string text = std::move(outcome.output);
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += outcome.exit_status ? "[exit status " + std::to_string(*outcome.exit_status) + "]"
                              : std::string("[no exit status]");
  ToolResult result{std::move(text), !outcome.exit_status.has_value(), outcome.exit_status, outcome.truncated,
                    turn_ending(outcome)};
  return result;
}

std::string turn_ending(const CommandOutcome& outcome) {
  if (outcome.start_failure.empty()) return "";
  return "The desk's terminal could not start, so the turn cannot go on: " + outcome.start_failure;
}

void add_bash_tools(ToolRegistry& registry, std::shared_ptr<BashSession> session) {
  registry.add(std::make_unique<BashTool>(session));
  registry.add(std::make_unique<BashBackgroundTool>(session));
  registry.add(std::make_unique<CheckBackgroundTool>(session));
  registry.add(std::make_unique<BashRestartTool>(std::move(session)));
}

}  // namespace deskd::tools
