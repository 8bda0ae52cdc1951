#include "runner/app/cli_values.h"

#include <charconv>

namespace deskd::app {

std::optional<std::uint64_t> parse_count(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const auto number = parse_count(text.substr(0, digits));
  if (!number) return std::nullopt;
  std::string_view unit = text.substr(digits);
  if (unit.ends_with("iB")) unit.remove_suffix(2);
  else if (unit.size() > 1 && unit.ends_with("B")) unit.remove_suffix(1);
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K" || unit == "k") shift = 10;
  else if (unit == "M" || unit == "m") shift = 20;
  else if (unit == "G" || unit == "g") shift = 30;
  else if (unit == "T" || unit == "t") shift = 40;
  else return std::nullopt;
  if (shift > 0 && *number > (UINT64_MAX >> shift)) return std::nullopt;
  return *number << shift;
}

}  // namespace deskd::app
