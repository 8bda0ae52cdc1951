#include "runner/desk/refusal_recorder.h"

#include <algorithm>

#include "runner/desk/landlock_audit_reader.h"
#include "runner/events/event_kinds.h"

namespace deskd::desk {

namespace json = boost::json;

std::shared_ptr<DeskRefusalRecorder> DeskRefusalRecorder::create(boost::asio::any_io_executor executor, EventBus& bus,
                                                                 std::string desk_name, const Clock& clock,
                                                                 std::shared_ptr<LandlockAuditReader> landlock_audit) {
  std::shared_ptr<DeskRefusalRecorder> recorder(
      new DeskRefusalRecorder(std::move(executor), bus, std::move(desk_name), clock));
  recorder->landlock_audit_ = std::move(landlock_audit);
  // The bus keeps its sinks for its life: this one holds the recorder weakly and does
  // nothing once the desk's recorder is gone.
  bus.add_sink([weak = std::weak_ptr<DeskRefusalRecorder>(recorder)](const Event& event) {
    if (auto alive = weak.lock()) alive->note_call(event);
  });
  return recorder;
}

DeskRefusalRecorder::DeskRefusalRecorder(boost::asio::any_io_executor executor, EventBus& bus, std::string desk_name,
                                         const Clock& clock)
    : executor_(std::move(executor)), bus_(bus), desk_name_(std::move(desk_name)), clock_(clock) {}

void DeskRefusalRecorder::watch_landlock_domain(pid_t creator_host_pid) {
  if (landlock_audit_) landlock_audit_->watch(creator_host_pid, weak_from_this());
}

void DeskRefusalRecorder::settle() {
  if (landlock_audit_) landlock_audit_->drain();
}

std::string DeskRefusalRecorder::key_of(const sandbox::Refusal& refusal) {
  return std::string(sandbox::enforcer_name(refusal.enforcer)) + '\n' + refusal.what + '\n' + refusal.rule;
}

// Called under the bus's lock for every event of every desk: cheap, and it never publishes.
void DeskRefusalRecorder::note_call(const Event& event) {
  if (event.desk != desk_name_) return;  // a subagent's events name "desk/subagent"
  const bool called = event.kind == event_kind::kToolCalled;
  if (!called && event.kind != event_kind::kToolFinished && event.kind != event_kind::kTurnStarted) return;
  std::lock_guard lock(mutex_);
  const auto text = [&](const char* field) {
    const json::value* value = event.data.if_contains(field);
    return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
  };
  if (event.kind == event_kind::kTurnStarted) {
    running_trigger_ = text("trigger");
    running_tool_call_.clear();
    return;
  }
  if (const std::string trigger = text("trigger"); !trigger.empty()) running_trigger_ = trigger;
  running_tool_call_ = called ? text("id") : std::string();
}

json::object DeskRefusalRecorder::data_of(const Fold& fold, std::uint64_t count) const {
  const sandbox::Refusal& refusal = fold.refusal;
  json::object data{{"enforcer", sandbox::enforcer_name(refusal.enforcer)},
                    {"what", refusal.what},
                    {"rule", refusal.rule},
                    {"count", count}};
  if (!refusal.details.empty()) data["details"] = refusal.details;
  if (refusal.probe) data["probe"] = true;
  if (refusal.process) {
    const sandbox::RefusedProcess& process = *refusal.process;
    if (process.pid_in_desk > 0) data["pid"] = process.pid_in_desk;
    if (!process.comm.empty()) data["comm"] = process.comm;
    if (!process.exe.empty()) data["exe"] = process.exe;
    std::string said = process.comm.empty() ? std::string("?") : process.comm;
    if (process.pid_in_desk > 0) said += ", pid " + std::to_string(process.pid_in_desk);
    if (!process.exe.empty()) said += ", " + process.exe;
    data["process"] = said;
  }
  if (!fold.trigger.empty()) data["trigger"] = fold.trigger;
  if (!fold.tool_call.empty()) data["tool_call"] = fold.tool_call;
  return data;
}

std::optional<json::object> DeskRefusalRecorder::within_cap(json::object data, Clock::TimePoint now) {
  if (now - minute_start_ >= std::chrono::minutes(1) || now < minute_start_) {
    minute_start_ = now;
    records_in_minute_ = 0;
  }
  if (records_in_minute_ >= kRecordsPerMinute) {
    ++dropped_;
    return std::nullopt;
  }
  ++records_in_minute_;
  if (dropped_ > 0) data["dropped_before"] = dropped_;
  dropped_ = 0;
  return data;
}

void DeskRefusalRecorder::take_repeats(Fold& fold, std::vector<json::object>& out) {
  if (fold.repeats == 0) return;
  const std::uint64_t repeats = fold.repeats;
  fold.repeats = 0;
  // The repeats after the window's first record, told as one: "folded" marks it so.
  json::object data = data_of(fold, repeats);
  data["folded"] = repeats;
  if (auto capped = within_cap(std::move(data), clock_.now())) out.push_back(std::move(*capped));
}

void DeskRefusalRecorder::expire(Clock::TimePoint now, std::vector<json::object>& out) {
  for (auto it = folds_.begin(); it != folds_.end();) {
    const auto window = it->second.refusal.probe ? kProbeFoldWindow : kFoldWindow;
    if (now - it->second.window_start < window && now >= it->second.window_start) {
      ++it;
      continue;
    }
    take_repeats(it->second, out);
    it = folds_.erase(it);
  }
}

bool DeskRefusalRecorder::folds_now(const std::string& key) const {
  const auto found = folds_.find(key);
  if (found == folds_.end()) return false;
  const auto age = clock_.now() - found->second.window_start;
  const auto window = found->second.refusal.probe ? kProbeFoldWindow : kFoldWindow;
  return age >= Clock::TimePoint::duration::zero() && age < window;
}

bool DeskRefusalRecorder::is_fresh(const sandbox::Refusal& refusal) const {
  std::lock_guard lock(mutex_);
  return !folds_now(key_of(refusal));
}

void DeskRefusalRecorder::record(sandbox::Refusal refusal) {
  std::vector<json::object> records;
  {
    std::lock_guard lock(mutex_);
    const Clock::TimePoint now = clock_.now();
    std::string key = key_of(refusal);
    ++sequence_;
    // The model's line: one per distinct refusal, its place kept by the latest sequence.
    auto line = std::find_if(lines_.begin(), lines_.end(), [&](const Line& kept) { return kept.key == key; });
    if (!refusal.shown_to_model) {
      // told to people only
    } else if (line != lines_.end()) {
      line->last_sequence = sequence_;
    } else {
      if (lines_.size() >= kLinesKept) {
        lines_.erase(std::min_element(lines_.begin(), lines_.end(),
                                      [](const Line& a, const Line& b) { return a.last_sequence < b.last_sequence; }));
      }
      lines_.push_back(Line{key, sandbox::refusal_line(refusal), sequence_});
    }
    if (folds_now(key)) {
      ++folds_.find(key)->second.repeats;
    } else {
      expire(now, records);
      if (folds_.size() >= kTrackedRefusals) {
        // Every window is young and a new refusal comes: the oldest gives way, its repeats
        // told now (or counted as dropped by the cap).
        auto oldest = std::min_element(folds_.begin(), folds_.end(), [](const auto& a, const auto& b) {
          return a.second.window_start < b.second.window_start;
        });
        take_repeats(oldest->second, records);
        folds_.erase(oldest);
      }
      Fold fold{now, 0, std::move(refusal), running_trigger_, running_tool_call_};
      if (auto data = within_cap(data_of(fold, 1), now)) records.push_back(std::move(*data));
      folds_.emplace(std::move(key), std::move(fold));
    }
  }
  publish_all(std::move(records));
}

void DeskRefusalRecorder::flush() {
  std::vector<json::object> records;
  {
    std::lock_guard lock(mutex_);
    expire(clock_.now(), records);
  }
  publish_all(std::move(records));
}

// Outside the mutex: the bus calls its sinks, this recorder's among them, in line.
void DeskRefusalRecorder::publish_all(std::vector<json::object> records) {
  for (json::object& data : records) bus_.publish(desk_name_, event_kind::kRefused, std::move(data));
}

std::uint64_t DeskRefusalRecorder::mark() {
  std::vector<json::object> records;
  std::uint64_t sequence = 0;
  {
    std::lock_guard lock(mutex_);
    expire(clock_.now(), records);
    sequence = sequence_;
  }
  publish_all(std::move(records));
  return sequence;
}

std::vector<std::string> DeskRefusalRecorder::lines_since(std::uint64_t mark) const {
  std::lock_guard lock(mutex_);
  std::vector<const Line*> recent;
  for (const Line& line : lines_) {
    if (line.last_sequence > mark) recent.push_back(&line);
  }
  std::sort(recent.begin(), recent.end(),
            [](const Line* a, const Line* b) { return a->last_sequence < b->last_sequence; });
  std::vector<std::string> texts;
  for (const Line* line : recent) texts.push_back(line->text);
  return texts;
}

}  // namespace deskd::desk
