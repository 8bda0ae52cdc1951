#include "runner/desk/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <map>
#include <string_view>
#include <unordered_map>

namespace deskd::desk {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr std::size_t kReadChunkBytes = 64 * 1024;

std::string quoted(const fs::path& path) { return "\"" + path.string() + "\""; }

// Makes a new file's name durable: without this, a power cut can leave the folder without
// the journal even though its lines were fsync'ed.
Result<void> sync_folder(const fs::path& folder) {
  const fs::path name = folder.empty() ? fs::path(".") : folder;
  const UniqueFd fd(retry_on_eintr([&] { return ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (!fd || ::fsync(fd.get()) != 0) {
    return Error::from_errno(errno, "The journal's folder " + quoted(name) + " could not be synced");
  }
  return success();
}

// Triggers accepted and not yet finished, in the order accepted. Finished ones are
// forgotten at once, so memory follows what is open, not the length of the journal.
class OpenTriggers {
 public:
  void accepted(Trigger trigger) {
    const auto found = sequence_of_.find(trigger.id);
    if (found != sequence_of_.end()) {
      // Accepted again (a re-delivery journaled after a restart): keep its first place.
      by_sequence_[found->second] = std::move(trigger);
      return;
    }
    sequence_of_.emplace(trigger.id, next_sequence_);
    by_sequence_.emplace(next_sequence_++, std::move(trigger));
  }
  void finished(const std::string& id) {
    const auto found = sequence_of_.find(id);
    if (found == sequence_of_.end()) return;
    by_sequence_.erase(found->second);
    sequence_of_.erase(found);
  }
  std::vector<Trigger> take() {
    std::vector<Trigger> triggers;
    triggers.reserve(by_sequence_.size());
    for (auto& [sequence, trigger] : by_sequence_) triggers.push_back(std::move(trigger));
    return triggers;
  }

 private:
  std::uint64_t next_sequence_ = 0;
  std::map<std::uint64_t, Trigger> by_sequence_;
  std::unordered_map<std::string, std::uint64_t> sequence_of_;
};

// Reads one journal line into `open`; false when the line is not a well-formed event.
bool read_line(std::string_view line, OpenTriggers& open) {
  boost::system::error_code error;
  const json::value value = json::parse(line, error);
  const json::object* event = error ? nullptr : value.if_object();
  if (event == nullptr) return false;
  const json::value* kind = event->if_contains("kind");
  const json::value* data = event->if_contains("data");
  if (kind == nullptr || !kind->is_string() || data == nullptr || !data->is_object()) return false;
  if (kind->get_string() == event_kind::kTriggerAccepted) {
    Result<Trigger> trigger = trigger_from_json(data->get_object());
    if (!trigger.ok()) return false;
    open.accepted(std::move(trigger).value());
  } else if (kind->get_string() == event_kind::kTriggerFinished) {
    const json::value* id = data->get_object().if_contains("trigger");
    if (id == nullptr || !id->is_string()) return false;
    open.finished(std::string(id->get_string()));
  }
  return true;
}

}  // namespace

Result<Journal> Journal::open(const fs::path& path) {
  if (path.empty() || !path.has_filename()) {
    return Error::make(ErrorCode::invalid_argument, "A journal needs a file name, not " + quoted(path) + ".");
  }
  const fs::path folder = path.parent_path();
  std::error_code folder_error;
  if (!folder.empty()) fs::create_directories(folder, folder_error);
  if (folder_error) {
    return Error::from_errno(folder_error.value(),
                             "The journal's folder " + quoted(folder) + " could not be created");
  }
  // O_RDWR rather than O_WRONLY only so that the last byte can be read back below.
  constexpr int kFlags = O_RDWR | O_APPEND | O_CLOEXEC;
  // 0600: the journal holds the user's messages.
  UniqueFd fd(retry_on_eintr([&] { return ::open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0600); }));
  const bool created = fd.valid();
  if (!created && errno == EEXIST) fd.reset(retry_on_eintr([&] { return ::open(path.c_str(), kFlags); }));
  if (!fd) return Error::from_errno(errno, "The journal " + quoted(path) + " could not be opened");
  if (created) DESKD_RETURN_IF_ERROR(sync_folder(folder));

  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) {
    return Error::from_errno(errno, "The journal " + quoted(path) + " could not be examined");
  }
  if (!S_ISREG(status.st_mode)) {
    return Error::make(ErrorCode::invalid_argument, "The journal " + quoted(path) + " is not a regular file.");
  }
  bool starts_mid_line = false;
  if (status.st_size > 0) {
    char last = '\n';
    if (retry_on_eintr([&] { return ::pread(fd.get(), &last, 1, status.st_size - 1); }) != 1) {
      return Error::from_errno(errno, "The journal " + quoted(path) + " could not be read");
    }
    starts_mid_line = last != '\n';
  }
  Journal journal(path, std::move(fd));
  journal.starts_mid_line_ = starts_mid_line;
  return journal;
}

Result<void> Journal::append(const Event& event) {
  std::string line = json::serialize(to_json(event));
  line += '\n';
  const std::lock_guard lock(*mutex_);
  if (starts_mid_line_) line.insert(line.begin(), '\n');
  // One write(2) per line: with O_APPEND the kernel places it at the end as a whole, so
  // lines never interleave, even with a second writer (a deskctl tool, a stray process).
  const ssize_t written = retry_on_eintr([&] { return ::write(fd_.get(), line.data(), line.size()); });
  if (written < 0) return Error::from_errno(errno, "The journal " + quoted(path_) + " could not be written");
  if (static_cast<std::size_t>(written) != line.size()) {
    // Only a full disk or a file size limit cuts a regular file's write short.
    starts_mid_line_ = true;
    return Error::make(ErrorCode::system, "Only " + std::to_string(written) + " of " + std::to_string(line.size()) +
                                              " bytes could be written to the journal " + quoted(path_) +
                                              "; the disk may be full.");
  }
  starts_mid_line_ = false;
  // The desk acknowledges a trigger only after this returns, so the line must be on disk,
  // not only in the page cache: a crash or power cut after the reply loses no message.
  if (event.kind == event_kind::kTriggerAccepted && retry_on_eintr([&] { return ::fsync(fd_.get()); }) != 0) {
    return Error::from_errno(errno, "The journal " + quoted(path_) + " could not be flushed to disk");
  }
  return success();
}

Result<std::vector<Trigger>> Journal::unfinished_triggers(const fs::path& path, std::size_t* skipped_lines) {
  std::size_t skipped = 0;
  if (skipped_lines != nullptr) *skipped_lines = 0;
  const UniqueFd fd(retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) {
    // A desk that never ran has no journal, and nothing to re-deliver.
    if (errno == ENOENT) return std::vector<Trigger>{};
    return Error::from_errno(errno, "The journal " + quoted(path) + " could not be opened");
  }
  OpenTriggers open;
  const auto take_line = [&](std::string_view line) {
    if (!line.empty() && !read_line(line, open)) ++skipped;
  };
  std::string pending;  // the start of a line whose end has not been read yet
  std::string chunk(kReadChunkBytes, '\0');
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), chunk.data(), chunk.size()); });
    if (count < 0) return Error::from_errno(errno, "The journal " + quoted(path) + " could not be read");
    if (count == 0) break;
    std::string_view rest(chunk.data(), static_cast<std::size_t>(count));
    for (std::size_t newline = rest.find('\n'); newline != std::string_view::npos; newline = rest.find('\n')) {
      if (pending.empty()) {
        take_line(rest.substr(0, newline));
      } else {
        pending.append(rest.substr(0, newline));
        take_line(pending);
        pending.clear();
      }
      rest.remove_prefix(newline + 1);
    }
    pending.append(rest);
  }
  // A last line without its newline: a crash tore it, unless only the newline is missing.
  take_line(pending);
  if (skipped_lines != nullptr) *skipped_lines = skipped;
  return open.take();
}

}  // namespace deskd::desk
