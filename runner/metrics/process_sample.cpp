#include "runner/metrics/process_sample.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/unique_fd.h"

namespace deskd::metrics {

namespace {

// VmRSS is in kB ("VmRSS:     12345 kB"); the kernel's "kB" means KiB.
std::optional<std::uint64_t> resident_bytes_of_self() {
  UniqueFd status(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  if (!status) return std::nullopt;
  char buffer[4096];
  std::size_t filled = 0;
  for (;;) {
    const ssize_t count = ::read(status.get(), buffer + filled, sizeof buffer - 1 - filled);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) break;
    filled += static_cast<std::size_t>(count);
    if (filled == sizeof buffer - 1) break;
  }
  buffer[filled] = '\0';
  const char* line = std::strstr(buffer, "\nVmRSS:");
  if (line == nullptr) return std::nullopt;
  unsigned long long kibibytes = 0;
  if (std::sscanf(line + 7, " %llu", &kibibytes) != 1) return std::nullopt;
  return static_cast<std::uint64_t>(kibibytes) * 1024;
}

std::optional<std::uint64_t> open_descriptors_of_self() {
  DIR* folder = ::opendir("/proc/self/fd");
  if (folder == nullptr) return std::nullopt;
  std::uint64_t entries = 0;
  while (const dirent* entry = ::readdir(folder)) {
    if (entry->d_name[0] != '.') ++entries;
  }
  ::closedir(folder);
  // The listing's own descriptor was open while it was read.
  return entries > 0 ? entries - 1 : 0;
}

}  // namespace

ProcessSample sample_process() { return {resident_bytes_of_self(), open_descriptors_of_self()}; }

}  // namespace deskd::metrics
