#include "base/result.h"

#include <cstring>
#include <exception>

namespace deskd {

Error Error::from_errno(int error_number, std::string what) {
  // strerrordesc_np is async-signal-safe and thread-safe, unlike strerror.
  const char* description = strerrordesc_np(error_number);
  what += ": ";
  what += description != nullptr ? description : "unknown error";
  what += '.';
  return Error{ErrorCode::system, error_number, std::move(what)};
}

std::string describe_exception(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "an unknown error";
  }
}

}  // namespace deskd
