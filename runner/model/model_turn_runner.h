#pragma once
// ModelTurnRunner: the agent loop. Ask the model; run the tool calls it makes through the
// desk's ToolRegistry, in order; hand back the results, with any steering messages that
// arrived meanwhile; until the model answers without tools. Whatever ends a turn (a failed
// request, a /stop, a failed summary), the session stays one a model accepts: every tool
// call in it has its result. A reply cut by a limit is published (MODEL_REPLY_CUT), ends
// the turn as cut (TurnOutcome::cut_reason) unless it may go on, and the model is told of
// the cut with the next message. A refusal takes the turn back out of the session (the
// refused message is not sent again); a refused or unusable reply is still counted and
// settled in the budget with the usage the server billed.

#include <memory>
#include <optional>
#include <string>

#include "runner/desk/budget_keeper.h"
#include "runner/desk/turn_runner.h"
#include "runner/model/context_budget.h"
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
  /// message before the next request (a tool call and its result are never split). The
  /// input is the server's count, or estimated from the request's size when the server
  /// sent none or an implausibly small one (context_budget.h); when summarising is not
  /// enough, the longest texts are cut and, past the window, older messages dropped.
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
  /// `keeper`, `usage` and `budget` may be null. With a `budget`, every call is reserved
  /// there first (a refused one throws desk::BudgetReached and is not made) and its usage
  /// is counted through it (in the budget's UsageTracker, which `usage` then must be or be
  /// null), so it is never counted twice.
  ModelTurnRunner(std::shared_ptr<ModelProvider> provider, std::shared_ptr<tools::ToolRegistry> registry,
                  TurnRunnerSettings settings, desk::SessionKeeper* keeper = nullptr,
                  desk::UsageTracker* usage = nullptr, desk::BudgetKeeper* budget = nullptr);

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
  /// One model call: reserved in the budget (with `input_tokens` as its input, or the
  /// request's size in tokens when 0), made, and its usage counted.
  boost::asio::awaitable<ModelResponse> ask(ModelRequest request, std::uint64_t input_tokens = 0);
  /// Counts a call's usage (settling `reservation` in the budget, or recording it), and
  /// adds it to requests() and tokens(); kept even while the turn is being stopped.
  boost::asio::awaitable<void> count_usage(const ModelResponse& response, desk::BudgetReservation reservation);
  /// Saves the transcript through the session keeper, when the desk keeps sessions.
  boost::asio::awaitable<void> save_session();
  /// The next request of a turn, with `context` told of progress and retries.
  boost::asio::awaitable<ModelResponse> ask_for_turn(desk::TurnContext& context);
  /// The tokens the next turn request would take: the server's last plausible count plus
  /// the estimate of what was added since, or the estimate of the whole request.
  std::uint64_t next_request_tokens() const;
  /// After a reply: compacts when the request just sent, or the next one, passes the share.
  boost::asio::awaitable<void> compact_if_needed(desk::TurnContext& context);
  /// Before a request: compacts when the request about to be sent passes the share (tool
  /// results since the last reply can be far larger than the window).
  boost::asio::awaitable<void> keep_within_window(desk::TurnContext& context);
  /// Bounds the session (session_compaction.cpp): summarises the older part, cuts the
  /// longest texts, and drops older messages while it is still past the window; publishes
  /// SESSION_COMPACTED when it changed anything, SESSION_COMPACTION_FAILED when a summary
  /// failed. Never drops the turn's own message. Throws only when the turn is cancelled.
  boost::asio::awaitable<void> compact(InputCount used, desk::TurnContext& context);
  /// The summary of transcript_[0, split), or nothing when it failed (and was published).
  boost::asio::awaitable<std::optional<std::string>> summary_of(std::size_t split, InputCount used,
                                                                desk::TurnContext& context);
  /// Replaces transcript_[0, split) by one user message opening with `opening`, keeping
  /// the turn's own message when it was among them.
  void replace_older(std::size_t split, std::string opening);
  /// The bytes of a turn request without its messages: system prompt and tools.
  std::size_t fixed_request_bytes() const;

  std::shared_ptr<ModelProvider> provider_;
  std::shared_ptr<tools::ToolRegistry> registry_;
  TurnRunnerSettings settings_;
  desk::SessionKeeper* keeper_;
  desk::UsageTracker* usage_;
  desk::BudgetKeeper* budget_;
  std::string summary_;
  boost::json::array transcript_;
  /// Said to the model with the next message: its last turn's reply was cut.
  std::string cut_note_;
  /// The message of the turn being run: compaction never drops it.
  std::string turn_message_;
  /// The last turn request's size, what it was counted as, and the server's count when
  /// it was plausible (cleared when compaction changes the transcript).
  std::size_t last_request_bytes_ = 0;
  InputCount last_input_;
  std::optional<std::uint64_t> last_trusted_tokens_;
  std::uint64_t requests_ = 0;
  std::uint64_t tokens_ = 0;
};

}  // namespace deskd::model
