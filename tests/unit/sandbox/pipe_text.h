#pragma once
// For the sandbox tests that read what a sandboxed command writes to a pipe it keeps open.

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace deskd::sandbox::pipe_test {

/// What `fd` gave until it holds `until`, reached end of file, or 30 seconds passed.
inline std::string read_until(int fd, const std::string& until) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (text.find(until) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd readable{fd, POLLIN, 0};
    if (::poll(&readable, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t count = ::read(fd, buffer, sizeof buffer);
    if (count <= 0) break;
    text.append(buffer, static_cast<std::size_t>(count));
  }
  return text;
}

}  // namespace deskd::sandbox::pipe_test
