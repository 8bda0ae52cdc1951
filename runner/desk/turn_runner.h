#pragma once
// TurnRunner: what runs a desk's turn, a /btw side question and the day's summary. The
// desk runtime drives it; ModelTurnRunner (runner/model/) is the real one, and tests use
// fakes. A turn is cancelled (a /stop, a stall) through its coroutine's cancellation slot.

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <string>
#include <vector>

#include "runner/desk/session.h"
#include "runner/events/trigger.h"

namespace deskd::desk {

/// What a running turn can reach of its desk.
class TurnContext {
 public:
  virtual ~TurnContext() = default;
  /// The messages that arrived since the last call, for the turn's next tool round.
  virtual std::vector<Trigger> take_steering() = 0;
  /// Publishes an event of the turn (MODEL_TEXT, TOOL_CALLED, TOOL_FINISHED).
  virtual void publish(const std::string& kind, boost::json::object data) = 0;
  /// Says the turn is making progress (model output, a tool event): resets the stall timer.
  virtual void progress() = 0;
};

/// What a finished turn said.
struct TurnOutcome {
  std::string reply;
  /// Why the turn's last reply was cut before the model finished it ("max_tokens",
  /// "model_context_window_exceeded"); "" when it was whole.
  std::string cut_reason;
};

class TurnRunner {
 public:
  virtual ~TurnRunner() = default;
  /// Runs one turn for `message` (which starts with the context line). Throws on failure;
  /// a cancelled turn ends with boost::system::system_error(operation_aborted).
  virtual boost::asio::awaitable<TurnOutcome> run_turn(std::string message, TurnContext& context) = 0;
  /// Answers a side question beside the running turn: no tools, not written to the session.
  virtual boost::asio::awaitable<std::string> side_question(std::string question) = 0;
  /// Summarises the session so far, for a day's rollover.
  virtual boost::asio::awaitable<std::string> summarise() = 0;
  /// Continues `session` from its transcript (a resumed or brand-new session, or the one a
  /// rollover started with the day's summary).
  virtual void resume_session(const Session& session) = 0;
  /// Releases what the runner holds.
  virtual boost::asio::awaitable<void> close() = 0;
};

}  // namespace deskd::desk
