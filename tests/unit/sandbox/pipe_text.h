#pragma once
// For the sandbox tests that read what a sandboxed command wrote to a pipe.

#include <unistd.h>

#include <cstddef>
#include <string>

namespace deskd::sandbox::pipe_test {

/// Everything read from `fd` until end of file (every writer closed) or an error.
inline std::string read_to_end(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t count; (count = ::read(fd, buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(count));
  return text;
}

}  // namespace deskd::sandbox::pipe_test
