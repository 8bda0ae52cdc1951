#pragma once
// Journal: a desk's events, appended one JSON object a line to
// <state folder>/desks/<desk>/journal.jsonl. A trigger is written (and flushed to disk)
// before the desk acknowledges it; when the desk starts again, triggers that were accepted
// but never finished are queued again, marked as re-delivered, so a crash loses no message.

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runner/desk/event.h"
#include "runner/desk/trigger.h"

namespace deskd::desk {

class Journal {
 public:
  /// Opens (creating folders and file as needed) the journal at `path` for appending.
  static Result<Journal> open(const std::filesystem::path& path);

  /// Appends one event line (TRIGGER_ACCEPTED lines are fsync'ed before returning).
  Result<void> append(const Event& event);

  /// The triggers with a TRIGGER_ACCEPTED line (data: the trigger) and no TRIGGER_FINISHED
  /// line (data: {"trigger": id}), in the order accepted. Torn or malformed lines (a crash
  /// mid-write) are skipped and counted in `skipped_lines`.
  static Result<std::vector<Trigger>> unfinished_triggers(const std::filesystem::path& path,
                                                          std::size_t* skipped_lines = nullptr);

  const std::filesystem::path& path() const { return path_; }

 private:
  Journal(std::filesystem::path path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::filesystem::path path_;
  UniqueFd fd_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  // The file may end without a newline (a crash or a short write tore its last line); the
  // next line then starts with one, so that it is not glued to the torn one and lost too.
  bool starts_mid_line_ = false;
};

}  // namespace deskd::desk
