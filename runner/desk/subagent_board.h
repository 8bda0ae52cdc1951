#pragma once
// SubagentBoard: a desk's subagents — the helpers its model starts with start_subagent —
// running and recent, for /agents; how many may run at once; and the desk's publish, which
// journals their events under the desk with the subagent's id and keeps the turn that
// started them from counting as stalled. Safe from any thread.

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace deskd::desk {

/// One subagent as /agents shows it.
struct SubagentRecord {
  std::string id;  ///< "sa-" + 8 hex digits
  std::string task;
  std::string state = "running";  ///< running, finished, failed, stopped
  std::uint64_t turns = 0;        ///< model calls so far
  std::uint64_t tokens = 0;       ///< input + output tokens so far
  std::chrono::system_clock::time_point started{};
};

class SubagentBoard {
 public:
  /// How many recent (ended) subagents /agents keeps.
  static constexpr std::size_t kRecentKept = 20;
  /// The most a config may allow to run at once per desk.
  static constexpr std::size_t kMaximumLimit = 16;

  using Publish = std::function<void(const char* kind, boost::json::object data)>;

  /// `limit`: how many may run at once (0: none).
  explicit SubagentBoard(std::size_t limit) : limit_(limit) {}

  std::size_t limit() const { return limit_; }

  /// Registers a running subagent for `task`; refused when `limit` already run.
  Result<std::string> start(std::string task, std::chrono::system_clock::time_point now);
  /// Updates the counts of a running subagent.
  void update(const std::string& id, std::uint64_t turns, std::uint64_t tokens);
  /// Marks it ended ("finished", "failed", "stopped"); it moves to the recent ones.
  void end(const std::string& id, std::string state);

  /// Running ones first (oldest first), then the recent ones (newest first).
  std::vector<SubagentRecord> list() const;
  std::size_t running() const;
  /// The text of /agents.
  std::string describe(std::chrono::system_clock::time_point now) const;

  /// The desk's publish and the running turn's progress, set by the desk while it runs
  /// (null: events go nowhere).
  void attach(Publish publish, std::function<void()> progress);
  /// Publishes a subagent's event through the desk, with {"subagent": id} in its data; it
  /// is progress of the turn that started the subagent.
  void publish(const std::string& id, const char* kind, boost::json::object data) const;
  /// Tells the turn that started the subagents that they make progress (a streamed reply).
  void progress() const;

 private:
  mutable std::mutex mutex_;
  std::size_t limit_;
  std::vector<SubagentRecord> running_;
  std::deque<SubagentRecord> recent_;
  Publish publish_;
  std::function<void()> progress_;
};

}  // namespace deskd::desk
