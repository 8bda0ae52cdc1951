#include "runner/desk/subagent_board.h"

#include <algorithm>

#include "base/random_id.h"

namespace deskd::desk {

Result<std::string> SubagentBoard::start(std::string task, std::chrono::system_clock::time_point now) {
  const std::lock_guard lock(mutex_);
  if (limit_ == 0) {
    return Error::make(ErrorCode::refused, "This desk may not start subagents (subagents = 0 in its config).");
  }
  if (running_.size() >= limit_) {
    return Error::make(ErrorCode::refused, std::to_string(running_.size()) +
                                               " subagents already run, the most this desk allows at once; "
                                               "wait for one to finish.");
  }
  SubagentRecord record;
  record.id = "sa-" + random_hex(4);
  record.task = std::move(task);
  record.started = now;
  running_.push_back(record);
  return record.id;
}

void SubagentBoard::update(const std::string& id, std::uint64_t turns, std::uint64_t tokens) {
  const std::lock_guard lock(mutex_);
  for (SubagentRecord& record : running_) {
    if (record.id != id) continue;
    record.turns = turns;
    record.tokens = tokens;
  }
}

void SubagentBoard::end(const std::string& id, std::string state) {
  const std::lock_guard lock(mutex_);
  const auto found =
      std::find_if(running_.begin(), running_.end(), [&](const SubagentRecord& record) { return record.id == id; });
  if (found == running_.end()) return;
  SubagentRecord record = std::move(*found);
  running_.erase(found);
  record.state = std::move(state);
  recent_.push_front(std::move(record));
  if (recent_.size() > kRecentKept) recent_.pop_back();
}

std::vector<SubagentRecord> SubagentBoard::list() const {
  const std::lock_guard lock(mutex_);
  std::vector<SubagentRecord> all(running_.begin(), running_.end());
  all.insert(all.end(), recent_.begin(), recent_.end());
  return all;
}

std::size_t SubagentBoard::running() const {
  const std::lock_guard lock(mutex_);
  return running_.size();
}

std::string SubagentBoard::describe(std::chrono::system_clock::time_point now) const {
  const std::vector<SubagentRecord> all = list();
  if (all.empty()) {
    return "No subagents have run" + std::string(limit_ == 0 ? " (this desk may not start any)." : " yet.") +
           " At most " + std::to_string(limit_) + " may run at once.";
  }
  std::string text = "Subagents (at most " + std::to_string(limit_) + " at once):";
  for (const SubagentRecord& record : all) {
    std::string task = record.task;
    if (task.size() > 80) task = task.substr(0, 77) + "...";
    for (char& character : task) {
      if (character == '\n') character = ' ';
    }
    text += "\n" + record.id + "  " + record.state + "  " + std::to_string(record.turns) + " turns  " +
            std::to_string(record.tokens) + " tokens";
    if (record.state == "running") {
      text +=
          "  " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - record.started).count()) + " s";
    }
    text += "  " + task;
  }
  return text;
}

void SubagentBoard::attach(Publish publish, std::function<void()> progress) {
  const std::lock_guard lock(mutex_);
  publish_ = std::move(publish);
  progress_ = std::move(progress);
}

void SubagentBoard::progress() const {
  std::function<void()> progress;
  {
    const std::lock_guard lock(mutex_);
    progress = progress_;
  }
  if (progress) progress();
}

void SubagentBoard::publish(const std::string& id, const char* kind, boost::json::object data) const {
  Publish publish;
  {
    const std::lock_guard lock(mutex_);
    publish = publish_;
  }
  if (!publish) return;
  data["subagent"] = id;
  publish(kind, std::move(data));
  progress();
}

}  // namespace deskd::desk
