#pragma once
// A desk tool: what a model can call. Each has a name, a description written for a model,
// a JSON Schema for its input, and an asynchronous call that returns text and an error
// flag. Nothing a caller sends may throw out of call(): bad input is an error result.

#include <boost/asio/awaitable.hpp>
#include <boost/json/fwd.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace deskd::tools {

/// What one tool call produced.
struct ToolResult {
  std::string text;                ///< What the model reads.
  bool is_error = false;           ///< The call failed or was refused; `text` says why.
  std::optional<int> exit_status;  ///< For bash: the command's status, empty when it had none.
  bool truncated = false;          ///< Output was left out because it was too long.
  /// Set when the turn cannot go on (the desk's terminal could not start): the sentence the
  /// turn fails with. The result still answers its call in the session.
  std::string ends_turn;

  static ToolResult success(std::string text) { return ToolResult{std::move(text), false, std::nullopt, false, {}}; }
  static ToolResult failure(std::string text) { return ToolResult{std::move(text), true, std::nullopt, false, {}}; }
};

/// What calling a tool does to the world, for clients that decide by it whether to ask the
/// user first (MCP's ToolAnnotations). The defaults are the cautious ones the spec assumes.
struct ToolEffects {
  bool read_only = false;    ///< It changes nothing.
  bool destructive = true;   ///< It may overwrite or remove (meaningful when not read_only).
  bool idempotent = false;   ///< A second identical call changes nothing more.
  bool open_world = true;    ///< It may reach beyond the desk (the network, other machines).
};

/// The output schema every tool's structured result follows at least: the text the tool
/// answered, whether output was left out, and whether the call failed (so that a host that
/// shows the model only structuredContent still says so). A tool that adds fields declares
/// its own.
extern const std::string_view kBasicOutputSchema;

/// What of the desk a tool may touch, for /tools: the words come from the desk's
/// Confinement (describe_tool_reach in desk_tools.h).
enum class ToolReach {
  none,       ///< nothing of the desk (a test's tool)
  shell,      ///< runs commands in the desk's sandbox
  reads,      ///< reads the desk's world through its PathPolicy
  writes,     ///< writes the desk's writable places through its PathPolicy
  proposes,   ///< stores a proposed change for a person to accept
  delegates,  ///< starts subagents with the desk's tools, in sandboxes of their own
};

/// One tool of a desk.
class Tool {
 public:
  virtual ~Tool() = default;
  /// A stable identifier such as "read_file" ([a-z_]+).
  virtual std::string_view name() const = 0;
  /// What the tool does and when to use it, for a model.
  virtual std::string_view description() const = 0;
  /// A JSON Schema ("type": "object") describing the input, as JSON text.
  virtual std::string_view input_schema() const = 0;
  /// A short name for people ("Run a command"); the tool's name unless it says otherwise.
  virtual std::string_view title() const { return name(); }
  /// What a call does to the world; the cautious defaults unless the tool says otherwise.
  virtual ToolEffects effects() const { return {}; }
  /// A JSON Schema ("type": "object") of the structured result: "text" (the result's text),
  /// "truncated", and "exit_status" when the result has one.
  virtual std::string_view output_schema() const { return kBasicOutputSchema; }
  /// Runs the tool. Never throws; bad input gives an error result naming the problem.
  virtual boost::asio::awaitable<ToolResult> call(const boost::json::object& input) = 0;
  /// Starts in the background what the tool's first call would otherwise wait for (the bash
  /// session's terminal): a turn has begun and its model is still writing. Never fails:
  /// a start that fails is tried again, and reported, by the call. Most tools have nothing
  /// to start.
  virtual void prepare() {}
  /// Releases what the tool holds (the bash session); later calls fail with a clear result.
  virtual boost::asio::awaitable<void> close();
  /// What of the desk it may touch.
  virtual ToolReach reach() const { return ToolReach::none; }
  /// Whether several calls to it in one model reply may run at once (subagents); the
  /// others run one after another, in the order the model gave them.
  virtual bool runs_beside_others() const { return false; }
};

}  // namespace deskd::tools
