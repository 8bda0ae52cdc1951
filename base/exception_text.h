#pragma once
// The text of an exception caught at a layer's edge (a turn, a tool call, a side question).

#include <exception>
#include <string>

namespace deskd {

/// Its what(), or "an unknown error" for anything that is not a std::exception.
std::string describe_exception(const std::exception_ptr& failure);

}  // namespace deskd
