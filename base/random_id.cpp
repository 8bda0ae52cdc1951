#include "base/random_id.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <span>

#include "base/hex.h"

namespace deskd {

namespace {

// SplitMix64: spreads a counter over 64 bits, for the fallback.
std::uint64_t mix(std::uint64_t value) {
  value += 0x9E3779B97F4A7C15ULL;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

bool fill_from_kernel(unsigned char* buffer, std::size_t size) {
  std::size_t filled = 0;
  while (filled < size) {
    const ssize_t got = ::getrandom(buffer + filled, size - filled, GRND_NONBLOCK);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    filled += static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace

std::string random_hex(std::size_t bytes) {
  unsigned char random[32] = {};
  if (bytes > sizeof random) bytes = sizeof random;
  if (!fill_from_kernel(random, bytes)) {
    static std::atomic<std::uint64_t> counter{0};
    const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (std::size_t index = 0; index < bytes; index += 8) {
      const std::uint64_t value = mix(counter.fetch_add(1) ^ mix(now) ^ (static_cast<std::uint64_t>(::getpid()) << 40));
      for (std::size_t byte = 0; byte < 8 && index + byte < bytes; ++byte) {
        random[index + byte] = static_cast<unsigned char>(value >> (8 * byte));
      }
    }
  }
  return hex_encode(std::span<const unsigned char>(random, bytes));
}

}  // namespace deskd
