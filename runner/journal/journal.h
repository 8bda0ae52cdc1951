#pragma once
// Journal: a desk's events, appended one JSON object a line to
// <state folder>/desks/<desk>/journal.jsonl. A trigger is written (and flushed to disk)
// before the desk acknowledges it; when the desk starts again, recover() finds the triggers
// that were accepted but never finished, how far each got, and the lines that could not be
// read, so a crash loses no message and nothing runs again unsaid.
//
// A line the disk refuses (full, or past a size limit) is held and written before the next
// one, so a finish line is not lost to a moment of full disk. A journal that grows past
// its limit is compacted: rewritten with only what a restart needs (the open triggers'
// lines, the last pause switch and the last events), atomically, the previous one kept as journal.jsonl.1.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "runner/events/event.h"
#include "runner/journal/journal_scan.h"

namespace deskd::desk {

class Journal {
 public:
  struct Limits {
    /// Past this size the journal is compacted, at start and while the desk runs.
    std::uint64_t compact_past_bytes = 32 * 1024 * 1024;
    /// What a compaction keeps besides the open triggers' lines.
    KeptTail kept_tail;
    /// Refused lines held to write again, at most (more are dropped, and counted).
    std::size_t maximum_held_bytes = 4 * 1024 * 1024;
  };

  /// Opens (creating folders and file as needed) the journal at `path` for appending.
  static Result<Journal> open(const std::filesystem::path& path, Limits limits);
  static Result<Journal> open(const std::filesystem::path& path) { return open(path, Limits{}); }
  Journal(Journal&&) noexcept;
  Journal& operator=(Journal&&) noexcept;
  ~Journal();

  /// Appends one event line; safe from any thread. TRIGGER_ACCEPTED lines are fsync'ed
  /// before returning, and refused with an error when they cannot be written. Any other
  /// line the disk refuses is held (held_lines()) and written before the next line; the
  /// error then says so.
  Result<void> append(const Event& event);

  /// What append_flushed() calls once its line is on disk, or with why it is not.
  using Flushed = std::function<void(Result<void>)>;

  /// Appends one line now, as append() does, and calls `flushed` once it is on disk (after
  /// an fsync that began after the write): lines that wait together share one fsync (group
  /// commit), run on the journal's own flusher thread, never the caller's. `flushed` runs on
  /// that thread, in the order the lines were written; or at once, on the calling thread,
  /// with the error when the line cannot be written. Safe from any thread. A journal being
  /// destroyed still flushes, and calls, every line waiting.
  void append_flushed(const Event& event, Flushed flushed);

  /// Told how long each fsync of the journal's lines took (deskd's metrics), on the thread
  /// that ran it; it must be quick.
  using FsyncObserver = std::function<void(std::chrono::nanoseconds took)>;
  /// Tells every later fsync to `observer`. Call it before the journal is shared.
  void tell_fsyncs_to(FsyncObserver observer);

  /// How many refused lines wait to be written again.
  std::size_t held_lines() const;

  /// A rewrite of the journal, as it went.
  struct Compaction {
    std::uint64_t bytes_before = 0;
    std::uint64_t bytes_after = 0;
    std::size_t lines_before = 0;
    std::size_t lines_kept = 0;
    std::chrono::milliseconds took{0};
    std::filesystem::path previous;  ///< where the journal as it was is kept
  };

  /// What a restart finds in the journal as it was when opened (lines this process
  /// appended are not re-delivered). Reads it once: later calls find nothing. Compacts it
  /// when it is past its limit or has damaged lines. Blocking: call it off the event loop.
  struct Recovery {
    std::vector<OpenTrigger> open_triggers;  ///< in the order accepted
    std::vector<DamagedLine> damaged;        ///< the first JournalScan::kMaximumDamagedKept
    std::size_t damaged_count = 0;
    std::size_t lines = 0;
    std::optional<PauseSwitch> pause_switch; ///< the last /pause or /resume handled, if any
    std::optional<Compaction> compaction;    ///< when it was rewritten
    std::optional<Error> compaction_error;   ///< when a rewrite was due and failed
  };
  Result<Recovery> recover();

  /// Whether the journal has grown past its limit since it was opened or last compacted.
  bool wants_compaction() const;
  /// Rewrites the journal with only what a restart needs; lines appended meanwhile (from
  /// any thread) are kept. Blocking: call it off the event loop.
  Result<Compaction> compact();

  /// Reads the journal at `path` whole (for tests and tools); a missing file is empty.
  static Result<JournalScan> read(const std::filesystem::path& path);

  const std::filesystem::path& path() const;

 private:
  struct State;
  explicit Journal(std::unique_ptr<State> state);
  Result<Compaction> rewrite_or_wait(const JournalScan& scan, std::uint64_t scanned_bytes,
                                     std::chrono::steady_clock::time_point began);
  Result<Compaction> rewrite(const JournalScan& scan, std::uint64_t scanned_bytes, std::chrono::steady_clock::time_point began);
  std::unique_ptr<State> state_;
};

}  // namespace deskd::desk
