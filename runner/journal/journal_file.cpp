#include "runner/journal/journal_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "base/unique_fd.h"

namespace deskd::desk::journal_file {

namespace fs = std::filesystem;

constexpr std::size_t kReadChunkBytes = 256 * 1024;

std::string quoted(const fs::path& path) { return "\"" + path.string() + "\""; }

Result<void> sync_folder(const fs::path& folder) {
  const fs::path name = folder.empty() ? fs::path(".") : folder;
  const UniqueFd fd(retry_on_eintr([&] { return ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (!fd || ::fsync(fd.get()) != 0) {
    return Error::from_errno(errno, "The journal's folder " + quoted(name) + " could not be synced");
  }
  return success();
}

Result<void> read_lines(int fd, std::optional<std::uint64_t> limit, const fs::path& path,
                        const std::function<void(std::string_view)>& take_line) {
  std::string pending;  // the start of a line whose end has not been read yet
  std::string chunk(kReadChunkBytes, '\0');
  std::uint64_t offset = 0;
  for (;;) {
    std::size_t wanted = chunk.size();
    if (limit) wanted = static_cast<std::size_t>(std::min<std::uint64_t>(wanted, *limit - offset));
    if (wanted == 0) break;
    const ssize_t count = retry_on_eintr([&] { return ::pread(fd, chunk.data(), wanted, static_cast<off_t>(offset)); });
    if (count < 0) return Error::from_errno(errno, "The journal " + quoted(path) + " could not be read");
    if (count == 0) break;
    offset += static_cast<std::uint64_t>(count);
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
  if (!pending.empty()) take_line(pending);
  return success();
}

Result<void> write_all(int fd, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t written = retry_on_eintr([&] { return ::write(fd, bytes.data(), bytes.size()); });
    if (written < 0) return Error::from_errno(errno, "Writing " + quoted(path) + " failed");
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return success();
}

}  // namespace deskd::desk::journal_file
