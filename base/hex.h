#pragma once
// Bytes as lower-case hexadecimal, for ids, digests and temporary names.

#include <span>
#include <string>

namespace deskd {

/// Two lower-case hex digits per byte, in order.
inline std::string hex_encode(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const unsigned char byte : bytes) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 0x0F];
  }
  return text;
}

}  // namespace deskd
