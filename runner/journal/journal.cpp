#include "runner/journal/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/unique_fd.h"
#include "runner/journal/journal_file.h"

namespace deskd::desk {

namespace fs = std::filesystem;
namespace json = boost::json;
using journal_file::quoted;

struct Journal::State {
  fs::path path;
  Limits limits;
  mutable std::mutex mutex;  // guards what follows, except `compacting`
  UniqueFd fd;
  // The file may end without a newline (a crash or a short write tore its last line); the
  // next line then starts with one, so that it is not glued to the torn one and lost too.
  bool starts_mid_line = false;
  std::uint64_t size = 0;
  std::uint64_t opened_size = 0;  // what recover() reads: the file as an earlier process left it
  std::uint64_t compact_at = 0;
  std::deque<std::string> held;   // refused lines, oldest first, each with its newline
  std::size_t held_bytes = 0;
  std::size_t dropped = 0;
  bool recovered = false;
  std::atomic<bool> compacting{false};
  // Group commit: lines written and waiting for an fsync, oldest first, and the thread that
  // runs the fsyncs (started at the first wait, ended with the journal).
  std::vector<Flushed> waiting;
  std::condition_variable flush_wanted;
  bool closing = false;
  bool flushing = false;           // an fsync of `fd` runs without the lock
  std::vector<UniqueFd> retired;   // descriptors a compaction replaced during that fsync
  std::thread flusher;
  FsyncObserver fsynced;  // set before the journal is shared, so read without the lock

  // fsync(2) of `target`, timed for `fsynced`; false with errno when it failed.
  bool timed_fsync(int target) const {
    const auto began = std::chrono::steady_clock::now();
    const bool synced = retry_on_eintr([&] { return ::fsync(target); }) == 0;
    if (synced && fsynced) fsynced(std::chrono::steady_clock::now() - began);
    return synced;
  }

  ~State() {
    {
      const std::lock_guard lock(mutex);
      closing = true;
    }
    flush_wanted.notify_one();
    if (flusher.joinable()) flusher.join();
  }

  // Precondition: `mutex` is held. Writes the held lines, then `line`; a line that cannot
  // be written is held (unless `must_write`: then the error is returned and the line is
  // dropped, for its sender to be told).
  Result<void> write_in_order(std::string line, bool must_write) {
    std::optional<Error> still_refused;
    while (!held.empty()) {
      if (auto written = write_line(held.front()); !written.ok()) {
        still_refused = std::move(written).error();
        break;
      }
      held_bytes -= held.front().size();
      held.pop_front();
    }
    if (still_refused) {
      if (must_write) {
        still_refused->what += " " + std::to_string(held.size()) + " earlier lines still wait, so the trigger is refused.";
        return *still_refused;
      }
      return hold(std::move(line), std::move(*still_refused));
    }
    if (auto written = write_line(line); !written.ok()) {
      // The desk refuses a trigger it cannot journal: its sender is told, and sends it again.
      if (must_write) return written;
      return hold(std::move(line), std::move(written).error());
    }
    return success();
  }

  // The flusher thread: one fsync for every line that waits when it begins, then their
  // callbacks, in order. Lines written during an fsync wait for the next one.
  void flush_waiting_lines() {
    std::unique_lock lock(mutex);
    for (;;) {
      flush_wanted.wait(lock, [&] { return !waiting.empty() || closing; });
      if (waiting.empty()) return;
      std::vector<Flushed> batch;
      batch.swap(waiting);
      // The fsync runs without the lock, so that appends need not wait for it. A compaction
      // that replaces the file meanwhile has copied these lines and flushed its file first,
      // and keeps this descriptor open (retired) until the fsync is over. No dup(): a deskd
      // out of descriptors must still take triggers.
      const int target = fd.get();
      flushing = true;
      lock.unlock();
      Result<void> flushed = success();
      if (!timed_fsync(target)) {
        flushed = Error::from_errno(errno, "The journal " + quoted(path) + " could not be flushed to disk");
      }
      for (Flushed& done : batch) done(flushed);
      batch.clear();  // the callbacks' captures go before the lock is taken again
      lock.lock();
      flushing = false;
      retired.clear();
    }
  }

  // Precondition: `mutex` is held. Writes `line` with one write(2): with O_APPEND the
  // kernel places it at the end as a whole, so lines never interleave, even with a second
  // writer (a deskctl tool, a stray process).
  Result<void> write_line(std::string_view line) {
    std::string joined;
    if (starts_mid_line) {
      joined.reserve(line.size() + 1);
      joined.push_back('\n');
      joined.append(line);
      line = joined;
    }
    const ssize_t written = retry_on_eintr([&] { return ::write(fd.get(), line.data(), line.size()); });
    if (written < 0) return Error::from_errno(errno, "The journal " + quoted(path) + " could not be written");
    size += static_cast<std::uint64_t>(written);
    if (written > 0) starts_mid_line = line[static_cast<std::size_t>(written) - 1] != '\n';
    if (static_cast<std::size_t>(written) != line.size()) {
      // Only a full disk or a file size limit cuts a regular file's write short.
      return Error::make(ErrorCode::system, "Only " + std::to_string(written) + " of " + std::to_string(line.size()) +
                                                " bytes could be written to the journal " + quoted(path) +
                                                "; the disk may be full.");
    }
    return success();
  }

  // Precondition: `mutex` is held. Keeps a refused line to write before the next one.
  Error hold(std::string line, Error why) {
    if (held_bytes + line.size() > limits.maximum_held_bytes) {
      ++dropped;
      why.what += " More than " + std::to_string(limits.maximum_held_bytes) + " bytes of lines wait already, so this one is lost (" +
                  std::to_string(dropped) + " lost so far).";
      return why;
    }
    held_bytes += line.size();
    held.push_back(std::move(line));
    why.what += " The line is held and written once the journal takes lines again (" + std::to_string(held.size()) +
                " held).";
    return why;
  }
};

Journal::Journal(std::unique_ptr<State> state) : state_(std::move(state)) {}
Journal::Journal(Journal&&) noexcept = default;
Journal& Journal::operator=(Journal&&) noexcept = default;
Journal::~Journal() = default;

const fs::path& Journal::path() const { return state_->path; }

Result<Journal> Journal::open(const fs::path& path, Limits limits) {
  if (path.empty() || !path.has_filename()) {
    return Error::make(ErrorCode::invalid_argument, "A journal needs a file name, not " + quoted(path) + ".");
  }
  const fs::path folder = path.parent_path();
  std::error_code folder_error;
  if (!folder.empty()) fs::create_directories(folder, folder_error);
  if (folder_error) {
    return Error::from_errno(folder_error.value(), "The journal's folder " + quoted(folder) + " could not be created");
  }
  // O_RDWR rather than O_WRONLY so that what is there can be read back (its last byte, a
  // compaction's copy of the lines appended while it ran).
  constexpr int kFlags = O_RDWR | O_APPEND | O_CLOEXEC;
  // 0600: the journal holds the user's messages.
  UniqueFd fd(retry_on_eintr([&] { return ::open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0600); }));
  const bool created = fd.valid();
  if (!created && errno == EEXIST) fd.reset(retry_on_eintr([&] { return ::open(path.c_str(), kFlags); }));
  if (!fd) return Error::from_errno(errno, "The journal " + quoted(path) + " could not be opened");
  if (created) DESKD_RETURN_IF_ERROR(journal_file::sync_folder(folder));

  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) {
    return Error::from_errno(errno, "The journal " + quoted(path) + " could not be examined");
  }
  if (!S_ISREG(status.st_mode)) {
    return Error::make(ErrorCode::invalid_argument, "The journal " + quoted(path) + " is not a regular file.");
  }
  auto state = std::make_unique<State>();
  if (status.st_size > 0) {
    char last = '\n';
    if (retry_on_eintr([&] { return ::pread(fd.get(), &last, 1, status.st_size - 1); }) != 1) {
      return Error::from_errno(errno, "The journal " + quoted(path) + " could not be read");
    }
    state->starts_mid_line = last != '\n';
  }
  state->path = path;
  state->limits = limits;
  state->fd = std::move(fd);
  state->size = static_cast<std::uint64_t>(status.st_size);
  state->opened_size = state->size;
  state->compact_at = limits.compact_past_bytes;
  return Journal(std::move(state));
}

Result<void> Journal::append(const Event& event) {
  std::string line = json::serialize(to_json(event));
  line += '\n';
  const bool accepted = event.kind == event_kind::kTriggerAccepted;
  State& state = *state_;
  const std::lock_guard lock(state.mutex);
  DESKD_RETURN_IF_ERROR(state.write_in_order(std::move(line), accepted));
  // The desk acknowledges a trigger only after this returns, so the line must be on disk,
  // not only in the page cache: a crash or power cut after the reply loses no message.
  if (accepted && !state.timed_fsync(state.fd.get())) {
    return Error::from_errno(errno, "The journal " + quoted(state.path) + " could not be flushed to disk");
  }
  return success();
}

void Journal::tell_fsyncs_to(FsyncObserver observer) { state_->fsynced = std::move(observer); }

void Journal::append_flushed(const Event& event, Flushed flushed) {
  std::string line = json::serialize(to_json(event));
  line += '\n';
  State& state = *state_;
  {
    std::unique_lock lock(state.mutex);
    if (auto written = state.write_in_order(std::move(line), true); !written.ok()) {
      lock.unlock();
      flushed(std::move(written).error());
      return;
    }
    state.waiting.push_back(std::move(flushed));
    if (!state.flusher.joinable()) state.flusher = std::thread([&state] { state.flush_waiting_lines(); });
  }
  state.flush_wanted.notify_one();
}

std::size_t Journal::held_lines() const {
  const std::lock_guard lock(state_->mutex);
  return state_->held.size();
}

bool Journal::wants_compaction() const {
  const std::lock_guard lock(state_->mutex);
  return state_->recovered && state_->size > state_->compact_at && !state_->compacting.load();
}

Result<JournalScan> Journal::read(const fs::path& path) {
  JournalScan scan;
  const UniqueFd fd(retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) {
    // A desk that never ran has no journal, and nothing to re-deliver.
    if (errno == ENOENT) return scan;
    return Error::from_errno(errno, "The journal " + quoted(path) + " could not be opened");
  }
  DESKD_RETURN_IF_ERROR(journal_file::read_lines(fd.get(), std::nullopt, path, [&](std::string_view line) { scan.take_line(line); }));
  return scan;
}

Result<Journal::Recovery> Journal::recover() {
  const auto began = std::chrono::steady_clock::now();
  State& state = *state_;
  std::uint64_t earlier_bytes = 0;
  {
    const std::lock_guard lock(state.mutex);
    if (state.recovered) return Recovery{};
    state.recovered = true;
    earlier_bytes = state.opened_size;
  }
  const UniqueFd fd(retry_on_eintr([&] { return ::open(state.path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) return Error::from_errno(errno, "The journal " + quoted(state.path) + " could not be opened");
  JournalScan scan(state.limits.kept_tail);
  DESKD_RETURN_IF_ERROR(
      journal_file::read_lines(fd.get(), earlier_bytes, state.path, [&](std::string_view line) { scan.take_line(line); }));
  Recovery recovery{.open_triggers = scan.open_triggers(), .damaged = scan.damaged(),
                    .damaged_count = scan.damaged_count(), .lines = scan.lines(),
                    .pause_switch = scan.pause_switch(), .compaction = {},
                    .compaction_error = {}};
  // Damaged lines are reported once: the rewrite leaves them out (journal.jsonl.1 keeps them).
  if ((earlier_bytes > state.limits.compact_past_bytes || scan.damaged_count() > 0) && !state.compacting.exchange(true)) {
    auto compaction = rewrite_or_wait(scan, earlier_bytes, began);
    state.compacting = false;
    if (compaction.ok()) {
      recovery.compaction = std::move(compaction).value();
    } else {
      recovery.compaction_error = std::move(compaction).error();
    }
  }
  return recovery;
}

Result<Journal::Compaction> Journal::compact() {
  const auto began = std::chrono::steady_clock::now();
  State& state = *state_;
  if (state.compacting.exchange(true)) {
    return Error::make(ErrorCode::refused, "The journal " + quoted(state.path) + " is being compacted already.");
  }
  struct Reset {
    std::atomic<bool>& flag;
    ~Reset() { flag = false; }
  } reset{state.compacting};
  std::uint64_t scanned_bytes = 0;
  {
    const std::lock_guard lock(state.mutex);
    // Before recover() the lines of an earlier process are still to be told apart.
    if (!state.recovered) {
      return Error::make(ErrorCode::refused, "The journal " + quoted(state.path) + " is compacted only after it was recovered.");
    }
    struct stat status {};
    if (::fstat(state.fd.get(), &status) != 0) {
      return Error::from_errno(errno, "The journal " + quoted(state.path) + " could not be examined");
    }
    scanned_bytes = static_cast<std::uint64_t>(status.st_size);
  }
  const UniqueFd fd(retry_on_eintr([&] { return ::open(state.path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) return Error::from_errno(errno, "The journal " + quoted(state.path) + " could not be opened");
  JournalScan scan(state.limits.kept_tail);
  DESKD_RETURN_IF_ERROR(
      journal_file::read_lines(fd.get(), scanned_bytes, state.path, [&](std::string_view line) { scan.take_line(line); }));
  return rewrite_or_wait(scan, scanned_bytes, began);
}

Result<Journal::Compaction> Journal::rewrite_or_wait(const JournalScan& scan, std::uint64_t scanned_bytes,
                                                     std::chrono::steady_clock::time_point began) {
  auto compaction = rewrite(scan, scanned_bytes, began);
  if (!compaction.ok()) {
    // Not again at every line (a full disk refuses the rewrite too): once the journal has
    // grown by half its limit more.
    const std::lock_guard lock(state_->mutex);
    state_->compact_at = state_->size + state_->limits.compact_past_bytes / 2;
  }
  return compaction;
}

Result<Journal::Compaction> Journal::rewrite(const JournalScan& scan, std::uint64_t scanned_bytes,
                                             std::chrono::steady_clock::time_point began) {
  State& state = *state_;
  const fs::path temporary = state.path.string() + ".compacting";
  const fs::path previous = state.path.string() + ".1";
  UniqueFd out(retry_on_eintr(
      [&] { return ::open(temporary.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600); }));
  if (!out) return Error::from_errno(errno, "The compacted journal " + quoted(temporary) + " could not be created");
  const auto give_up = [&](Error error) {
    (void)::unlink(temporary.c_str());
    error.what = "Compacting the journal failed, and it is left as it was: " + error.what;
    return error;
  };
  std::string kept;
  const std::vector<std::string> lines = scan.kept_lines();
  for (const std::string& line : lines) (kept += line) += '\n';
  if (auto written = journal_file::write_all(out.get(), kept, temporary); !written.ok()) return give_up(written.error());
  // The slow flush happens before the lock, so appends wait only for the short one below.
  if (::fsync(out.get()) != 0) return give_up(Error::from_errno(errno, "fsync of " + quoted(temporary)));

  const std::lock_guard lock(state.mutex);
  struct stat status {};
  if (::fstat(state.fd.get(), &status) != 0) return give_up(Error::from_errno(errno, "fstat of " + quoted(state.path)));
  const auto bytes_before = static_cast<std::uint64_t>(status.st_size);
  // What was appended while the old lines were read goes over as it is.
  std::size_t copied_lines = 0;
  std::string chunk(256 * 1024, '\0');
  for (std::uint64_t offset = scanned_bytes; offset < bytes_before;) {
    const auto wanted = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), bytes_before - offset));
    const ssize_t count = retry_on_eintr([&] { return ::pread(state.fd.get(), chunk.data(), wanted, static_cast<off_t>(offset)); });
    if (count <= 0) return give_up(Error::from_errno(count < 0 ? errno : EIO, "reading " + quoted(state.path)));
    const std::string_view piece(chunk.data(), static_cast<std::size_t>(count));
    copied_lines += static_cast<std::size_t>(std::count(piece.begin(), piece.end(), '\n'));
    if (auto written = journal_file::write_all(out.get(), piece, temporary); !written.ok()) return give_up(written.error());
    offset += static_cast<std::uint64_t>(count);
  }
  if (::fsync(out.get()) != 0) return give_up(Error::from_errno(errno, "fsync of " + quoted(temporary)));
  // The journal as it was stays beside the new one until the next compaction, for a
  // person to read; link, not rename, so that the journal's own name never goes missing.
  if (::unlink(previous.c_str()) != 0 && errno != ENOENT) {
    return give_up(Error::from_errno(errno, "removing the previous journal " + quoted(previous)));
  }
  if (::link(state.path.c_str(), previous.c_str()) != 0) {
    return give_up(Error::from_errno(errno, "keeping the journal as " + quoted(previous)));
  }
  if (::rename(temporary.c_str(), state.path.c_str()) != 0) {
    return give_up(Error::from_errno(errno, "renaming " + quoted(temporary) + " to " + quoted(state.path)));
  }
  // From here the new journal is in place; a failed folder sync only makes it less durable.
  (void)journal_file::sync_folder(state.path.parent_path());
  struct stat after {};
  (void)::fstat(out.get(), &after);
  char last = '\n';
  if (after.st_size > 0 && ::pread(out.get(), &last, 1, after.st_size - 1) != 1) last = '\n';
  if (state.flushing) state.retired.push_back(std::move(state.fd));
  state.fd = std::move(out);
  state.size = static_cast<std::uint64_t>(after.st_size);
  state.starts_mid_line = last != '\n';
  // Twice what is kept: a journal whose open triggers alone pass the limit is not
  // rewritten at every line.
  state.compact_at = std::max(state.limits.compact_past_bytes, 2 * state.size);
  return Compaction{.bytes_before = bytes_before, .bytes_after = state.size, .lines_before = scan.lines(),
                    .lines_kept = lines.size() + copied_lines,
                    .took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began),
                    .previous = previous};
}

}  // namespace deskd::desk
