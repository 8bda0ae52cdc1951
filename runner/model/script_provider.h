#pragma once
// The `script` provider: the embedded default model for the demo and the tests. Its
// replies come from a JSON-lines script, one line per desk turn:
//   {"text": "..."}                                      a reply, ending the turn
//   {"tool_calls": [{"name": "bash", "input": {...}}]}   tool calls, then an empty reply
//   {"steps": [{"tool_calls": [...]}, {"text": "..."}]}  several model answers in one turn
//   {"subagent": "TASK", "steps": [...]}                 a subagent's turn (or "text", ...)
// Each step is one model answer; a step with tool calls is followed by the next step once
// the results are in. The tool calls run for real through the desk's tool registry.
// Subagent lines are not desk turns: a subagent started with task TASK plays the first
// unplayed line whose "subagent" is TASK (or "*"), so one reply may start two subagents
// and each answers from the script, whatever order they ask in.

#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runner/model/model_provider.h"

namespace deskd::model {

class ScriptProvider final : public ModelProvider {
 public:
  /// One step: what the model says and the tools it calls.
  struct Step {
    std::string text;
    std::vector<ToolCall> tool_calls;
  };
  using Turn = std::vector<Step>;

  /// Parses a script; errors name the line and what is wrong ("script.jsonl:3: ...").
  static Result<ScriptProvider> parse(std::string_view text, std::string_view source = "script");
  static Result<ScriptProvider> load(const std::filesystem::path& path);
  /// The demo's script, built into deskd.
  static ScriptProvider embedded_demo();

  /// The model of a subagent started with `task`: the script's line for it, taken (a
  /// provider that answers that it has none when the script holds no such line).
  std::shared_ptr<ScriptProvider> for_subagent(const std::string& task);

  boost::asio::awaitable<ModelResponse> complete(ModelRequest request) override;
  std::string describe() const override { return "script"; }

  ScriptProvider(ScriptProvider&& other) noexcept;

 private:
  // The subagents' lines, by task, shared by the desk's provider and its subagents'.
  struct SubagentTurns {
    std::mutex mutex;
    std::vector<std::pair<std::string, Turn>> unplayed;
  };
  ScriptProvider(std::vector<Turn> turns, std::shared_ptr<SubagentTurns> subagent_turns)
      : turns_(std::move(turns)), subagent_turns_(std::move(subagent_turns)) {}
  std::vector<Turn> turns_;
  std::shared_ptr<SubagentTurns> subagent_turns_;
  std::size_t turn_index_ = 0;  // the next turn to start
  std::size_t step_index_ = 0;  // the next step of the current turn
  std::size_t call_counter_ = 0;
  bool in_turn_ = false;
};

}  // namespace deskd::model
