#pragma once
// Parsing of the values people type on deskd's command lines and in its config.

#include <cstdint>
#include <optional>
#include <string_view>

namespace deskd::app {

/// "512", "64K", "256M", "1G", "2T" (powers of 1024; a trailing "B"/"iB" is accepted).
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

/// A non-negative decimal integer without sign or spaces.
std::optional<std::uint64_t> parse_count(std::string_view text);

}  // namespace deskd::app
