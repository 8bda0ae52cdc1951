#include "runner/journal/journal_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <string>

#include "base/unique_fd.h"

namespace deskd::desk {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr std::size_t kChunkBytes = 256 * 1024;

std::optional<Event> parsed_event(std::string_view line) {
  boost::system::error_code error;
  const json::value value = json::parse(line, error);
  if (error || !value.is_object()) return std::nullopt;
  Result<Event> event = event_from_json(value.get_object());
  if (!event.ok() || !event_sequence_number(event->id)) return std::nullopt;
  return std::move(event).value();
}

// Up to `count` events from the end of the file, newest first.
void read_from_end(const fs::path& path, std::size_t count, std::uint64_t maximum_bytes, std::string_view only_kind,
                   std::vector<Event>& events) {
  const auto wanted = [&](const std::optional<Event>& event) {
    return event && (only_kind.empty() || event->kind == only_kind);
  };
  const UniqueFd fd(retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  struct stat status {};
  if (!fd || ::fstat(fd.get(), &status) != 0 || !S_ISREG(status.st_mode)) return;
  auto end = static_cast<std::uint64_t>(status.st_size);
  std::string rest;  // the start of the earliest line read so far, whose beginning is further back
  std::size_t found = 0;
  std::string chunk;
  const auto size = static_cast<std::uint64_t>(status.st_size);
  // Past the byte bound only as long as not even the newest event (its id) was found.
  while (end > 0 && found < count && (size - end < maximum_bytes || found == 0)) {
    const std::uint64_t start = end > kChunkBytes ? end - kChunkBytes : 0;
    chunk.resize(static_cast<std::size_t>(end - start));
    const ssize_t read = retry_on_eintr([&] { return ::pread(fd.get(), chunk.data(), chunk.size(), static_cast<off_t>(start)); });
    if (read != static_cast<ssize_t>(chunk.size())) return;
    rest.insert(0, chunk);
    end = start;
    // Every line after the first newline is whole; the part before it may begin further
    // back, unless this is the start of the file.
    std::size_t line_end = rest.size();
    while (found < count && line_end > 0) {
      const std::size_t newline = rest.rfind('\n', line_end - 1);
      if (newline == std::string::npos) break;
      if (auto event = parsed_event(std::string_view(rest).substr(newline + 1, line_end - newline - 1));
          wanted(event)) {
        events.push_back(std::move(*event));
        ++found;
      }
      line_end = newline;
    }
    rest.resize(line_end);
    if (end == 0 && found < count && !rest.empty()) {
      if (auto event = parsed_event(rest); wanted(event)) events.push_back(std::move(*event));
    }
  }
}

}  // namespace

std::vector<fs::path> journals_under(const fs::path& desks_folder) {
  std::vector<fs::path> journals;
  std::error_code error;
  for (fs::directory_iterator entry(desks_folder, error), end; !error && entry != end; entry.increment(error)) {
    if (entry->is_directory(error)) journals.push_back(entry->path() / "journal.jsonl");
  }
  std::sort(journals.begin(), journals.end());
  return journals;
}

PastEvents read_recent_events(const std::vector<fs::path>& journals, std::size_t count, std::uint64_t maximum_bytes,
                              std::string_view only_kind) {
  PastEvents past;
  for (const fs::path& journal : journals) read_from_end(journal, count, maximum_bytes, only_kind, past.events);
  const auto number = [](const Event& event) { return event_sequence_number(event.id).value_or(0); };
  std::sort(past.events.begin(), past.events.end(), [&](const Event& a, const Event& b) { return number(a) < number(b); });
  // One event a line, so an id seen twice is a line written twice: keep one.
  past.events.erase(std::unique(past.events.begin(), past.events.end(),
                                [&](const Event& a, const Event& b) { return number(a) == number(b); }),
                    past.events.end());
  if (!past.events.empty()) past.highest_event_number = number(past.events.back());
  if (past.events.size() > count) past.events.erase(past.events.begin(), past.events.end() - static_cast<std::ptrdiff_t>(count));
  return past;
}

}  // namespace deskd::desk
