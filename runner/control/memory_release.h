#pragma once
// MemoryReleaser: gives memory back to the system after a large drain. glibc keeps what a
// program frees in its heap and arenas for the next allocation, so a deskd that once held
// 200 MB of replies for a client that never read them would keep that RSS for good;
// malloc_trim(0) hands the free pages back. Trimming walks the whole heap, so it runs only
// once enough was freed, after the handler that freed it, and at most once per interval.

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <memory>

namespace deskd::control {

inline constexpr std::size_t kDefaultTrimThresholdBytes = std::size_t{4} << 20;
inline constexpr std::chrono::milliseconds kDefaultTrimInterval{1000};

class MemoryReleaser {
 public:
  /// Trims on `executor` once `threshold` bytes were reported freed, at most every `interval`.
  explicit MemoryReleaser(boost::asio::any_io_executor executor, std::size_t threshold = kDefaultTrimThresholdBytes,
                          std::chrono::milliseconds interval = kDefaultTrimInterval);
  ~MemoryReleaser();
  MemoryReleaser(const MemoryReleaser&) = delete;
  MemoryReleaser& operator=(const MemoryReleaser&) = delete;

  /// Notes that about `bytes` were freed (or are about to be, in this handler).
  void released(std::size_t bytes);

  /// How many trims ran (for tests).
  std::size_t trims() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// Returns free heap memory to the system now (malloc_trim(0) under glibc; nothing elsewhere).
void trim_free_memory();

}  // namespace deskd::control
