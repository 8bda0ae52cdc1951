#include "sandbox/init_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <string>

#include "base/unique_fd.h"

extern "C" const char deskd_init_image_start[];
extern "C" const char deskd_init_image_end[];

namespace deskd::sandbox {
namespace {

// Newer kernels ask for an explicit choice (and warn without one); older ones refuse the flag.
constexpr unsigned kMemfdExec = 0x0010U;  // MFD_EXEC, Linux 6.3

Result<UniqueFd> make_image() {
  int raw = ::memfd_create("deskd-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | kMemfdExec);
  if (raw < 0 && errno == EINVAL) raw = ::memfd_create("deskd-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (raw < 0) {
    return Error::from_errno(errno, "Creating the memfd for deskd-init (memfd_create) failed");
  }
  UniqueFd writable(raw);
  const char* cursor = deskd_init_image_start;
  while (cursor < deskd_init_image_end) {
    const ssize_t written = retry_on_eintr([&] {
      return ::write(writable.get(), cursor, static_cast<std::size_t>(deskd_init_image_end - cursor));
    });
    if (written <= 0) return Error::from_errno(errno, "Writing deskd-init into its memfd failed");
    cursor += written;
  }
  if (::fcntl(writable.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    return Error::from_errno(errno, "Sealing deskd-init's memfd failed");
  }
  // A file open for writing cannot be executed (ETXTBSY): keep only a read-only descriptor.
  const std::string self = "/proc/self/fd/" + std::to_string(writable.get());
  UniqueFd readable(::open(self.c_str(), O_RDONLY | O_CLOEXEC));
  if (!readable) return Error::from_errno(errno, "Reopening deskd-init's memfd read-only failed");
  return readable;
}

}  // namespace

Result<int> init_image_descriptor() {
  static std::once_flag once;
  static Result<UniqueFd>* image = nullptr;
  std::call_once(once, [] { image = new Result<UniqueFd>(make_image()); });  // kept for good
  if (!image->ok()) return image->error();
  return image->value().get();
}

}  // namespace deskd::sandbox
