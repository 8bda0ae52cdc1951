#pragma once
// What deskd's own process holds now, read from /proc/self at scrape time.

#include <cstdint>
#include <optional>

namespace deskd::metrics {

struct ProcessSample {
  std::optional<std::uint64_t> resident_bytes;    ///< VmRSS of /proc/self/status; none if unreadable
  std::optional<std::uint64_t> open_descriptors;  ///< entries of /proc/self/fd, less the one reading it
};

/// Reads /proc/self/status and /proc/self/fd. What cannot be read is left out.
ProcessSample sample_process();

}  // namespace deskd::metrics
