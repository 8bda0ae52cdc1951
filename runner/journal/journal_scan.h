#pragma once
// JournalScan: one pass over a journal's lines, for a restart and for a compaction: the
// triggers still open (accepted, never finished) and how far each got, the lines that
// could not be read and what of them was saved, the highest event id, and — when asked —
// the lines a rewritten journal must keep.

#include <boost/json/object.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runner/events/trigger.h"

namespace deskd::desk {

/// A trigger accepted and never finished, and how far it got before the journal ended.
struct OpenTrigger {
  enum class Progress {
    waiting,      ///< accepted, never started
    started,      ///< its turn (or the turn it steered) started and no end was journaled
    stopped,      ///< deskd stopped during its turn (TURN_STOPPED "the desk stopped")
    ended,        ///< its turn or answer is journaled; only its TRIGGER_FINISHED is missing
  };
  Trigger trigger = {};
  Progress progress = Progress::waiting;
  std::string accepted_event = {};  ///< the TRIGGER_ACCEPTED event's id ("" when unreadable)
  std::string progress_event = {};  ///< the event that set `progress`, e.g. "e-14 TURN_STARTED"
  std::optional<std::size_t> damaged_line = {};  ///< read from this damaged line
};

/// A line that is not a well-formed event.
struct DamagedLine {
  std::size_t line = 0;  ///< 1-based
  std::string problem;   ///< what is wrong with it, as a sentence
  std::string kind;      ///< the kind read from it, "" when none could be
  std::string trigger;   ///< the trigger it names, "" when none could be read
  std::string recovered; ///< what was saved of it, as a sentence; "" when nothing
};

/// The last /pause or /resume the desk handled (its DESK_PAUSED or DESK_RESUMED line).
struct PauseSwitch {
  bool paused = false;
  std::string event = {};  ///< e.g. "e-14 DESK_PAUSED"
};

/// What a compaction keeps: the lines of open triggers, the last pause switch, and the
/// last events.
struct KeptTail {
  std::size_t events = 10000;
  std::size_t bytes = 8 * 1024 * 1024;
};

class JournalScan {
 public:
  /// `keep`: remember the lines a compaction keeps (nullopt: keep nothing, just read).
  explicit JournalScan(std::optional<KeptTail> keep = std::nullopt) : keep_(keep) {}

  /// Reads the next line (without its newline). Blank lines are skipped.
  void take_line(std::string_view line);

  /// The open triggers, in the order they were accepted.
  std::vector<OpenTrigger> open_triggers() const;
  const std::vector<DamagedLine>& damaged() const { return damaged_; }
  /// How many lines were damaged (damaged() holds the first kMaximumDamagedKept).
  std::size_t damaged_count() const { return damaged_count_; }
  std::uint64_t highest_event_number() const { return highest_event_number_; }
  std::size_t lines() const { return line_number_; }
  /// Whether the desk was left paused: its last DESK_PAUSED or DESK_RESUMED; nullopt when
  /// the journal holds neither (a desk never paused is not).
  const std::optional<PauseSwitch>& pause_switch() const { return pause_switch_; }
  /// The kept lines, in journal order, each without its newline; needs `keep`. Damaged
  /// lines are left out (they were reported); a trigger read from one is kept as a whole
  /// TRIGGER_ACCEPTED line.
  std::vector<std::string> kept_lines() const;

  static constexpr std::size_t kMaximumDamagedKept = 1000;

 private:
  struct Open {
    OpenTrigger state;
    std::vector<std::size_t> lines = {};          // its lines, for a compaction
    std::vector<std::string> steered_by_it = {};  // steering delivered into its turn
    std::size_t damage_index = 0;            // in damaged_, when read from a damaged line
  };
  // `data` is null for a damaged line: its fields beyond the trigger are unknown.
  void event(std::string_view line, const std::string& id, const std::string& kind, const std::string& trigger,
             const boost::json::object* data);
  void accept(OpenTrigger trigger, std::string_view line);
  void end(Open& open, const std::string& how);
  void damaged_line(std::string problem, bool torn, const struct SalvagedLine& salvaged);
  Open* find(const std::string& trigger);

  std::optional<KeptTail> keep_;
  std::size_t line_number_ = 0;
  std::uint64_t highest_event_number_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::map<std::uint64_t, Open> open_;                     // by acceptance order
  std::unordered_map<std::string, std::uint64_t> sequence_of_;
  std::string running_;  // the trigger whose turn last started and has not ended
  std::vector<DamagedLine> damaged_;
  std::size_t damaged_count_ = 0;
  // For a compaction: the text of every line an open trigger may still need, and the tail.
  std::map<std::size_t, std::string> trigger_lines_;
  std::deque<std::pair<std::size_t, std::string>> tail_;
  // The pause switch outlives any tail: a desk paused a year ago is still paused.
  std::optional<PauseSwitch> pause_switch_;
  std::optional<std::pair<std::size_t, std::string>> pause_line_;
  std::size_t tail_bytes_ = 0;
};

}  // namespace deskd::desk
