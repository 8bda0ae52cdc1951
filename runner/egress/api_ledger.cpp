#include "runner/egress/api_ledger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/unique_fd.h"
#include "runner/egress/api_ledger_files.h"
#include "runner/events/india_time.h"

namespace deskd::egress {

namespace json = boost::json;
namespace files = ledger_files;

namespace {

// "2026-11-30T09:14:05.123+05:30": India time to the millisecond, so that lines of one
// second keep their order for a person reading them.
std::string india_time_with_milliseconds(Clock::TimePoint time) {
  const std::string seconds = desk::iso8601_india(time);  // "...T09:14:05+05:30"
  const auto since_epoch = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const long long milliseconds = ((since_epoch % 1000) + 1000) % 1000;
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ".%03lld", milliseconds);
  return seconds.substr(0, seconds.size() - 6) + fraction + seconds.substr(seconds.size() - 6);
}

// One line, its keys in the fixed order the ledger's readers and people rely on.
std::string format_line(std::uint64_t seq, const std::string& at, const LedgerEntry& entry, const std::string& prev) {
  json::object line;
  line["seq"] = seq;
  line["at"] = at;
  line["api"] = entry.api;
  line["method"] = entry.method;
  line["origin"] = entry.origin;
  line["path"] = entry.path;
  line["rule"] = entry.rule;
  line["outcome"] = entry.outcome;
  line["status"] = entry.status;
  line["request_bytes"] = entry.request_bytes;
  line["response_bytes"] = entry.response_bytes;
  line["request_sha256"] = entry.request_sha256;
  line["response_sha256"] = entry.response_sha256;
  line["reason"] = entry.reason;
  line["approval"] = entry.approval;
  line["prev"] = prev;
  return json::serialize(line);
}

// The seq a line carries, or nullopt when it is not a ledger line.
std::optional<std::uint64_t> seq_of(std::string_view line) {
  boost::system::error_code error;
  const json::value value = json::parse(line, error);
  if (error || !value.is_object()) return std::nullopt;
  const json::value* seq = value.as_object().if_contains("seq");
  if (seq == nullptr) return std::nullopt;
  const auto number = seq->to_number<std::uint64_t>(error);
  if (error) return std::nullopt;
  return number;
}

Result<UniqueFd> open_for_writing(const std::filesystem::path& file, int flags) {
  UniqueFd fd(
      retry_on_eintr([&] { return ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | flags, 0600); }));
  if (!fd) return Error::from_errno(errno, "Cannot open the ledger file " + file.string() + ".");
  // A file made by an older deskd or by hand is brought to the ledger's mode too.
  if (::fchmod(fd.get(), 0600) != 0) return Error::from_errno(errno, "Cannot make " + file.string() + " mode 0600.");
  return fd;
}

Result<void> sync_folder(const std::filesystem::path& folder) {
  UniqueFd fd(retry_on_eintr([&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (!fd || ::fsync(fd.get()) != 0)
    return Error::from_errno(errno, "Cannot flush the ledger folder " + folder.string() + ".");
  return success();
}

Result<void> write_whole(int fd, std::string_view bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t count = retry_on_eintr([&] { return ::write(fd, bytes.data() + written, bytes.size() - written); });
    if (count <= 0) return Error::from_errno(count < 0 ? errno : EIO, "Cannot write a line to the API ledger.");
    written += static_cast<std::size_t>(count);
  }
  return success();
}

// The first line of an open file (for its seq), read forward.
Result<std::string> first_line(int fd) {
  std::string line;
  char chunk[4096];
  for (off_t offset = 0;; offset += static_cast<off_t>(sizeof chunk)) {
    const ssize_t count = retry_on_eintr([&] { return ::pread(fd, chunk, sizeof chunk, offset); });
    if (count < 0) return Error::from_errno(errno, "Cannot read the ledger's first line.");
    const std::string_view got(chunk, static_cast<std::size_t>(count));
    const auto newline = got.find('\n');
    line.append(got.substr(0, newline));
    if (newline != std::string_view::npos || count == 0) return line;
  }
}

}  // namespace

struct ApiLedger::State {
  std::filesystem::path folder;
  const Clock& clock;
  std::uint64_t rotate_bytes;

  mutable std::mutex mutex;        // everything below
  std::shared_ptr<UniqueFd> file;  // ledger.jsonl, O_APPEND; shared with the flushing thread
  UniqueFd head;                   // ledger.head, one fixed-size record at offset 0
  std::uint64_t file_bytes = 0;
  std::uint64_t first_seq_in_file = 1;
  std::uint64_t last_seq = 0;
  std::string last_hash = files::kNoPreviousHash;
  std::string repaired;
  // Group commit: appends count what they wrote, the thread flushes up to the count it saw.
  std::condition_variable wake;
  std::uint64_t written = 0;
  std::uint64_t synced = 0;
  bool stopping = false;
  std::string sync_failure;
  std::thread flusher;

  State(std::filesystem::path folder_, const Clock& clock_, std::uint64_t rotate)
      : folder(std::move(folder_)), clock(clock_), rotate_bytes(rotate) {}

  // One fdatasync (of the file and the head) for every append made before it started.
  void flush_until_stopped() {
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || written > synced; });
      if (written == synced) return;  // stopping, and nothing left to flush
      const std::uint64_t target = written;
      const std::shared_ptr<UniqueFd> current = file;
      lock.unlock();
      const bool flushed = (!current || ::fdatasync(current->get()) == 0) && ::fdatasync(head.get()) == 0;
      const int error_number = errno;
      lock.lock();
      synced = target;
      if (!flushed && sync_failure.empty()) {
        sync_failure = std::string("The API ledger could not be flushed to disk (") + std::strerror(error_number) +
                       "); deskd records no more gated calls until it is restarted.";
      }
    }
  }

  Result<void> open_current() {
    DESKD_ASSIGN_OR_RETURN(UniqueFd fd, open_for_writing(folder / files::kCurrentName, O_APPEND));
    file = std::make_shared<UniqueFd>(std::move(fd));
    return success();
  }

  // The current file becomes ledger-<its first seq>.jsonl, flushed, and a new one begins.
  Result<void> rotate() {
    if (::fdatasync(file->get()) != 0)
      return Error::from_errno(errno, "Cannot flush the API ledger before rotating it.");
    const std::filesystem::path target = folder / files::rotated_name(first_seq_in_file);
    if (std::filesystem::exists(target)) {
      return Error::make(ErrorCode::internal, "Cannot rotate the API ledger: " + target.string() + " already exists.");
    }
    if (::rename((folder / files::kCurrentName).c_str(), target.c_str()) != 0) {
      return Error::from_errno(errno, "Cannot rename the API ledger to " + target.string() + ".");
    }
    file.reset();  // should the new file not open, the next append tries again
    file_bytes = 0;
    first_seq_in_file = last_seq + 1;
    DESKD_RETURN_IF_ERROR(open_current());
    return sync_folder(folder);
  }
};

ApiLedger::ApiLedger(std::unique_ptr<State> state) : state_(std::move(state)) {
  state_->flusher = std::thread([state = state_.get()] { state->flush_until_stopped(); });
}

ApiLedger::~ApiLedger() {
  {
    const std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_one();
  state_->flusher.join();
}

Result<std::shared_ptr<ApiLedger>> ApiLedger::open(const std::filesystem::path& folder, const Clock& clock,
                                                   std::uint64_t rotate_bytes) {
  std::error_code made;
  std::filesystem::create_directories(folder, made);
  if (made) return Error::from_errno(made.value(), "Cannot make the ledger folder " + folder.string() + ".");
  auto state = std::make_unique<State>(folder, clock, rotate_bytes);
  DESKD_RETURN_IF_ERROR(state->open_current());
  const std::filesystem::path current = folder / files::kCurrentName;
  const int fd = state->file->get();
  DESKD_ASSIGN_OR_RETURN(std::uint64_t size, files::file_size(fd, current));
  DESKD_ASSIGN_OR_RETURN(bool whole, files::ends_with_newline(fd, size, current));
  if (!whole) {
    // A crash mid-write left part of a line: it was never appended (append() had not
    // returned), so it is cut off and the chain goes on from the line before it.
    files::LinesFromEnd lines(fd, size);
    DESKD_ASSIGN_OR_RETURN(auto torn, lines.previous());
    const std::uint64_t torn_bytes = torn ? torn->size() : 0;
    if (::ftruncate(fd, static_cast<off_t>(size - torn_bytes)) != 0) {
      return Error::from_errno(errno, "Cannot cut the torn last line off " + current.string() + ".");
    }
    size -= torn_bytes;
    state->repaired = "ledger.jsonl ended in a torn line of " + std::to_string(torn_bytes) +
                      " bytes (deskd stopped while writing it); it was cut off.";
  }
  // Where the chain goes on from: this file's last line, else the newest rotated file's.
  std::optional<std::pair<int, std::filesystem::path>> last_of;
  std::optional<std::string> before_last_hash;
  UniqueFd rotated_fd;
  std::uint64_t last_size = size;
  if (size > 0) {
    last_of.emplace(fd, current);
    DESKD_ASSIGN_OR_RETURN(std::string first, first_line(fd));
    const auto first_seq = seq_of(first);
    if (!first_seq)
      return Error::make(ErrorCode::invalid_argument,
                         "The first line of " + current.string() + " is not a ledger line.");
    state->first_seq_in_file = *first_seq;
  } else {
    DESKD_ASSIGN_OR_RETURN(auto rotated, files::rotated_files(folder));
    if (!rotated.empty()) {
      DESKD_ASSIGN_OR_RETURN(rotated_fd, files::open_for_reading(rotated.back()));
      DESKD_ASSIGN_OR_RETURN(last_size, files::file_size(rotated_fd.get(), rotated.back()));
      last_of.emplace(rotated_fd.get(), rotated.back());
    }
  }
  if (last_of) {
    files::LinesFromEnd lines(last_of->first, last_size);
    DESKD_ASSIGN_OR_RETURN(auto last, lines.previous());
    const auto seq = last ? seq_of(*last) : std::nullopt;
    if (!seq) {
      return Error::make(ErrorCode::invalid_argument,
                         "The last line of " + last_of->second.string() +
                             " is not a ledger line, so its chain cannot be continued; see what is wrong with "
                             "`deskctl ledger DESK --verify`.");
    }
    state->last_seq = *seq;
    state->last_hash = files::sha256_hex(*last);
    if (size == 0) state->first_seq_in_file = *seq + 1;
    // The hash of the line before the last (in the same file), for a head one line behind.
    if (auto before = lines.previous(); before.ok() && before.value()) {
      before_last_hash = files::sha256_hex(*before.value());
    }
  }
  DESKD_ASSIGN_OR_RETURN(state->head, open_for_writing(folder / files::kHeadName, 0));
  char record[files::kHeadRecordBytes];
  const ssize_t got = retry_on_eintr([&] { return ::pread(state->head.get(), record, sizeof record, 0); });
  const auto head =
      got > 0 ? files::parse_head_record(std::string_view(record, static_cast<std::size_t>(got))) : std::nullopt;
  // append() writes the line, then the head: a deskd killed between the two leaves the head
  // naming the line before the last, whole (appends are one at a time, so never more than
  // one line behind). That is moved on to the last line and said. Anything else is left as
  // it is: verifying tells the difference too, until the next append's head.
  const bool one_behind = state->last_seq > 1 && head && head->seq + 1 == state->last_seq && before_last_hash &&
                          head->sha256 == *before_last_hash;
  bool moved_on = false;
  if (one_behind) {
    const std::string moved = files::format_head_record({state->last_seq, state->last_hash});
    const ssize_t put = retry_on_eintr([&] { return ::pwrite(state->head.get(), moved.data(), moved.size(), 0); });
    if (put == static_cast<ssize_t>(moved.size()) && ::fdatasync(state->head.get()) == 0) {
      if (!state->repaired.empty()) state->repaired += ' ';
      state->repaired += "ledger.head named line " + std::to_string(head->seq) + " and the ledger ends at line " +
                         std::to_string(state->last_seq) +
                         " (deskd stopped between writing a line and its head); the head now names line " +
                         std::to_string(state->last_seq) + ".";
      moved_on = true;
    }
  }
  if (!moved_on && state->last_seq > 0 && (!head || head->seq != state->last_seq || head->sha256 != state->last_hash)) {
    if (!state->repaired.empty()) state->repaired += ' ';
    state->repaired +=
        head ? "ledger.head named line " + std::to_string(head->seq) + ", but the ledger ends at line " +
                   std::to_string(state->last_seq) + " (lines lost to a power cut, or removed)."
             : "ledger.head was missing or damaged; the ledger ends at line " + std::to_string(state->last_seq) + ".";
  }
  if (made.value() == 0 && size == 0 && state->last_seq == 0) DESKD_RETURN_IF_ERROR(sync_folder(folder));
  state->file_bytes = size;
  return std::shared_ptr<ApiLedger>(new ApiLedger(std::move(state)));
}

Result<void> ApiLedger::append(const LedgerEntry& entry) {
  State& state = *state_;
  std::unique_lock lock(state.mutex);
  if (!state.sync_failure.empty()) return Error::make(ErrorCode::system, state.sync_failure);
  if (!state.file) DESKD_RETURN_IF_ERROR(state.open_current());
  const std::uint64_t seq = state.last_seq + 1;
  const std::string line = format_line(seq, india_time_with_milliseconds(state.clock.now()), entry, state.last_hash);
  const std::string bytes = line + '\n';
  if (state.file_bytes > 0 && state.file_bytes + bytes.size() > state.rotate_bytes) {
    DESKD_RETURN_IF_ERROR(state.rotate());
  }
  if (auto written = write_whole(state.file->get(), bytes); !written.ok()) {
    // Part of the line may be in the file: cut it off, so the chain is as it was. Should
    // even that fail, no line may follow the fragment: later appends are refused.
    if (::ftruncate(state.file->get(), static_cast<off_t>(state.file_bytes)) != 0) {
      state.sync_failure =
          "A line of the API ledger was half written and could not be cut off; deskd records no "
          "more gated calls until it is restarted (which repairs the file).";
    }
    return written;
  }
  state.file_bytes += bytes.size();
  state.last_seq = seq;
  state.last_hash = files::sha256_hex(line);
  // A fixed-size record rewritten in place by one pwrite, rather than a temporary file
  // renamed over it: no new inode and no folder update on every call. A crash cannot leave
  // a mix of two records that reads as a third: the record carries its own check
  // (ledger_files::parse_head_record), so a torn one is seen as damaged, never misread.
  const std::string record = files::format_head_record({seq, state.last_hash});
  const ssize_t put = retry_on_eintr([&] { return ::pwrite(state.head.get(), record.data(), record.size(), 0); });
  state.written += 1;
  lock.unlock();
  state.wake.notify_one();
  if (put != static_cast<ssize_t>(record.size())) {
    return Error::from_errno(put < 0 ? errno : EIO, "The API ledger's line " + std::to_string(seq) +
                                                        " was written, but ledger.head could not be updated.");
  }
  return success();
}

std::string ApiLedger::repaired() const {
  const std::lock_guard lock(state_->mutex);
  return state_->repaired;
}

}  // namespace deskd::egress
