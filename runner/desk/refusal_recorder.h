#pragma once
// A desk's refusal recorder: every enforcer's refusals (sandbox/refusal_report.h) become
// REFUSED events on the bus (journaled by the daemon's sink), with the trigger and tool call
// that were running. Repeats of one refusal (enforcer, what, rule) within kFoldWindow are
// folded: the first is published at once, the rest as one record with their count when the
// window is over (at the next refusal, a flush, or the recorder's end). At most
// kRecordsPerMinute records a minute are published; the next one says how many were dropped
// (as the egress proxy's NETWORK_REFUSED does). Its memory is bounded by kTrackedRefusals
// windows and kLinesKept lines, whatever the desk does.
//
// It also answers the desk's seccomp listeners (one per sandbox) on `executor`: each
// notification is answered with the errno the filter would have given, after it is recorded,
// so that a command's refusals are all recorded before the command can end.

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "runner/events/event_bus.h"
#include "sandbox/refusal_report.h"

namespace deskd::desk {

class LandlockAuditReader;

class DeskRefusalRecorder final : public sandbox::RefusalReporter,
                                  public std::enable_shared_from_this<DeskRefusalRecorder> {
 public:
  static constexpr std::chrono::seconds kFoldWindow{10};
  /// Probes (Refusal::probe) are folded over this much longer window.
  static constexpr std::chrono::seconds kProbeFoldWindow{3600};
  static constexpr std::uint64_t kRecordsPerMinute = 30;
  static constexpr std::size_t kTrackedRefusals = 256;
  static constexpr std::size_t kLinesKept = 64;
  /// Notifications answered in one wake-up before the loop serves others.
  static constexpr int kNoticesPerWakeUp = 64;

  /// A recorder for desk `desk_name` publishing on `bus` (which must outlive it); it follows
  /// the desk's TOOL_CALLED and TOOL_FINISHED events to know the running tool call.
  /// With `landlock_audit` (a root deskd's, when the kernel can tell), its sandboxes'
  /// Landlock refusals are recorded too.
  static std::shared_ptr<DeskRefusalRecorder> create(boost::asio::any_io_executor executor, EventBus& bus,
                                                     std::string desk_name, const Clock& clock,
                                                     std::shared_ptr<LandlockAuditReader> landlock_audit = nullptr);
  ~DeskRefusalRecorder() override;

  void record(sandbox::Refusal refusal) override;
  void watch_seccomp_listener(UniqueFd listener) override;
  void watch_landlock_domain(pid_t creator_host_pid) override;
  void settle() override;
  std::uint64_t mark() override;
  std::vector<std::string> lines_since(std::uint64_t mark) const override;

  /// Publishes the repeats whose window is over.
  void flush();
  /// How many seccomp listeners are being answered (a test's view of the bound).
  std::size_t listeners() const;

 private:
  DeskRefusalRecorder(boost::asio::any_io_executor executor, EventBus& bus, std::string desk_name, const Clock& clock);
  struct Fold {
    Clock::TimePoint window_start;
    std::uint64_t repeats = 0;
    sandbox::Refusal refusal;
    std::string trigger;
    std::string tool_call;
  };
  struct Line {
    std::string key;
    std::string text;
    std::uint64_t last_sequence = 0;
  };
  class ListenerWatch;
  friend class ListenerWatch;
  void forget(const ListenerWatch* watch);

  static std::string key_of(const sandbox::Refusal& refusal);
  bool folds_now(const std::string& key) const;  // under mutex_
  void note_call(const Event& event);
  // Under mutex_: the records to publish for `fold` (its repeats), within the cap.
  void take_repeats(Fold& fold, std::vector<boost::json::object>& out);
  std::optional<boost::json::object> within_cap(boost::json::object data, Clock::TimePoint now);
  void expire(Clock::TimePoint now, std::vector<boost::json::object>& out);
  void publish_all(std::vector<boost::json::object> records);
  boost::json::object data_of(const Fold& fold, std::uint64_t count) const;
  bool is_fresh(const sandbox::Refusal& refusal) const;

  boost::asio::any_io_executor executor_;
  EventBus& bus_;
  std::string desk_name_;
  const Clock& clock_;

  mutable std::mutex mutex_;
  std::map<std::string, Fold> folds_;
  std::vector<Line> lines_;
  std::uint64_t sequence_ = 0;
  std::string running_trigger_;
  std::string running_tool_call_;
  Clock::TimePoint minute_start_{};
  std::uint64_t records_in_minute_ = 0;
  std::uint64_t dropped_ = 0;
  std::vector<std::shared_ptr<ListenerWatch>> watches_;
  std::shared_ptr<LandlockAuditReader> landlock_audit_;
};

}  // namespace deskd::desk
