#include "base/result.h"

#include <cstring>

namespace deskd {

Error Error::from_errno(int error_number, std::string what) {
  // strerrordesc_np is async-signal-safe and thread-safe, unlike strerror.
  const char* description = strerrordesc_np(error_number);
  what += ": ";
  what += description != nullptr ? description : "unknown error";
  what += '.';
  return Error{ErrorCode::system, error_number, std::move(what)};
}

}  // namespace deskd
