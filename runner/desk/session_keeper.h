#pragma once
// SessionKeeper: keeps a desk's session under the daemon's state folder (outside every
// sandbox), resumes it when the desk starts, and before the first turn of a new India day
// rolls over: the model summarises the day, the old session is archived and a new one
// starts with the summary. Never mid-turn: the desk runtime asks between turns.

#include <boost/asio/awaitable.hpp>

#include <filesystem>

#include "base/clock.h"
#include "base/result.h"
#include "runner/desk/session.h"
#include "runner/desk/turn_runner.h"

namespace deskd::desk {

class SessionKeeper {
 public:
  /// Keeps sessions in `folder` (current.json, archive/<id>.json), created as needed.
  SessionKeeper(std::filesystem::path folder, const Clock& clock);

  /// Loads the saved session (or begins a new one, first saved with its first turn) and
  /// hands it to `runner`.
  Result<void> start(TurnRunner& runner);
  /// Whether the current session began on an earlier India day.
  bool needs_rollover() const;
  /// Summarises, archives and starts a new session with the summary; returns its id.
  boost::asio::awaitable<std::string> roll_over(TurnRunner& runner);
  /// Saves the transcript of the current session (after each turn), writing the file off
  /// the event loop (save_file_off_loop); the caller's coroutine waits until it is on disk.
  boost::asio::awaitable<Result<void>> save_transcript(boost::json::array transcript);

  const Session& session() const { return session_; }

 private:
  Session new_session(std::string summary) const;
  Result<void> save() const;

  std::filesystem::path folder_;
  const Clock& clock_;
  Session session_;
};

}  // namespace deskd::desk
