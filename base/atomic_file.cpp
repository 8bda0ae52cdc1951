#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/unique_fd.h"

namespace deskd {

Result<void> write_file_atomically(const std::filesystem::path& file, std::string_view contents,
                                   std::string_view what) {
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : ".";
  const std::filesystem::path temporary = folder / ("." + file.filename().native() + ".tmp");
  const std::string named = std::string(what) + " (" + file.native() + ")";
  UniqueFd fd(retry_on_eintr(
      [&] { return ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600); }));
  if (!fd) return Error::from_errno(errno, "Saving " + named + ": " + temporary.native() + " could not be created");
  const auto fail = [&](const std::string& step) {
    const int error_number = errno;
    ::unlink(temporary.c_str());
    return Error::from_errno(error_number, "Saving " + named + ": " + temporary.native() + " could not be " + step);
  };
  while (!contents.empty()) {
    const ssize_t written = retry_on_eintr([&] { return ::write(fd.get(), contents.data(), contents.size()); });
    if (written < 0) return fail("written");
    contents.remove_prefix(static_cast<std::size_t>(written));
  }
  if (retry_on_eintr([&] { return ::fsync(fd.get()); }) != 0) return fail("flushed to disk");
  fd.reset();
  if (::rename(temporary.c_str(), file.c_str()) != 0) return fail("renamed to " + file.native());
  // The rename itself survives a power cut only once the folder is flushed.
  const UniqueFd directory(retry_on_eintr([&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (!directory || ::fsync(directory.get()) != 0) {
    return Error::from_errno(errno, "Saving " + named + ": the folder " + folder.native() + " could not be flushed");
  }
  return success();
}

}  // namespace deskd
