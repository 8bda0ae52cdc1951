#include "base/unique_fd.h"

#include <unistd.h>

namespace deskd {

void UniqueFd::reset(int fd) {
  const int previous = std::exchange(fd_, fd);
  // close() is never retried on EINTR: on Linux the descriptor is released even then,
  // and a retry could close a descriptor another thread has just been given.
  if (previous >= 0) ::close(previous);
}

}  // namespace deskd
