#pragma once
// ModelTurnRunner: the agent loop. Ask the model; run the tool calls it makes through the
// desk's ToolRegistry, in order; hand back the results, with any steering messages that
// arrived meanwhile; until the model answers without tools. Whatever ends a turn (a failed
// request, a /stop, a failed summary), the session stays one a model accepts: every tool
// call in it has its result. A reply cut by a limit is published (MODEL_REPLY_CUT), ends
// the turn as cut (TurnOutcome::cut_reason) unless it may go on, and the model is told of
// the cut with the next message.

#include <memory>
#include <string>

#include "runner/desk/turn_runner.h"
#include "runner/model/model_provider.h"

namespace deskd::tools {
class ToolRegistry;
}
namespace deskd::desk {
class SessionKeeper;
class UsageTracker;
}  // namespace deskd::desk

namespace deskd::model {

struct TurnRunnerSettings {
  std::string system_prompt;
  /// A turn that asks for more tool rounds than this ends with an error.
  int maximum_tool_rounds = 100;
  /// Each tool result is cut to this many bytes before the model sees it.
  std::size_t maximum_tool_result_bytes = 100000;
  /// The model's context window, in tokens. When a request's input passes
  /// `compaction_share` of it, the older part of the session is summarised into one
  /// message before the next request (a tool call and its result are never split).
  std::uint32_t context_window_tokens = 200000;
  double compaction_share = 0.8;
  /// The provider's max_tokens, named in MODEL_REPLY_CUT events.
  std::uint32_t max_tokens = 8192;
  /// A reply cut at max_tokens (with no tool call) is followed once per turn by a request
  /// to go on from where it stopped, instead of ending the turn cut.
  bool continue_after_max_tokens = false;
  /// A turn whose model calls have used more tokens than this (input and output, over the
  /// runner's life) ends with an error; 0 for no budget. A subagent's budget.
  std::uint64_t maximum_tokens = 0;
};

class ModelTurnRunner final : public desk::TurnRunner {
 public:
  /// `keeper` and `usage` may be null.
  ModelTurnRunner(std::shared_ptr<ModelProvider> provider, std::shared_ptr<tools::ToolRegistry> registry,
                  TurnRunnerSettings settings, desk::SessionKeeper* keeper = nullptr,
                  desk::UsageTracker* usage = nullptr);

  boost::asio::awaitable<desk::TurnOutcome> run_turn(std::string message, desk::TurnContext& context) override;
  boost::asio::awaitable<std::string> side_question(std::string question) override;
  boost::asio::awaitable<std::string> summarise() override;
  void resume_session(const desk::Session& session) override;
  boost::asio::awaitable<void> close() override;

  /// Model calls made, and the tokens they used, over the runner's life.
  std::uint64_t requests() const { return requests_; }
  std::uint64_t tokens() const { return tokens_; }

  /// The transcript so far (for tests and the session keeper).
  const boost::json::array& transcript() const { return transcript_; }

 private:
  ModelRequest request(Purpose purpose, boost::json::array messages) const;
  boost::asio::awaitable<ModelResponse> ask(ModelRequest request);
  /// Saves the transcript through the session keeper, when the desk keeps sessions.
  boost::asio::awaitable<void> save_session();
  /// The next request of a turn, with `context` told of progress and retries.
  boost::asio::awaitable<ModelResponse> ask_for_turn(desk::TurnContext& context);
  /// Summarises the older part of the transcript if `response` says the context is nearly
  /// full; publishes SESSION_COMPACTED when it did, SESSION_COMPACTION_FAILED (transcript
  /// unchanged) when the summary failed. Throws only when the turn is cancelled.
  boost::asio::awaitable<void> compact_if_needed(const ModelResponse& response, desk::TurnContext& context);

  std::shared_ptr<ModelProvider> provider_;
  std::shared_ptr<tools::ToolRegistry> registry_;
  TurnRunnerSettings settings_;
  desk::SessionKeeper* keeper_;
  desk::UsageTracker* usage_;
  std::string summary_;
  boost::json::array transcript_;
  /// Said to the model with the next message: its last turn's reply was cut.
  std::string cut_note_;
  std::uint64_t requests_ = 0;
  std::uint64_t tokens_ = 0;
};

}  // namespace deskd::model
