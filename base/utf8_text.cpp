#include "base/utf8_text.h"

namespace deskd {

bool Utf8Validator::feed(std::string_view bytes) {
  if (!valid_) return false;
  for (const char character : bytes) {
    const auto byte = static_cast<unsigned char>(character);
    if (remaining_ == 0) {
      if (byte < 0x80) continue;
      if ((byte & 0xE0) == 0xC0) {
        remaining_ = 1, minimum_ = 0x80, code_point_ = byte & 0x1F;
      } else if ((byte & 0xF0) == 0xE0) {
        remaining_ = 2, minimum_ = 0x800, code_point_ = byte & 0x0F;
      } else if ((byte & 0xF8) == 0xF0) {
        remaining_ = 3, minimum_ = 0x10000, code_point_ = byte & 0x07;
      } else {
        return valid_ = false;
      }
      continue;
    }
    if ((byte & 0xC0) != 0x80) return valid_ = false;
    code_point_ = (code_point_ << 6) | (byte & 0x3F);
    if (--remaining_ == 0) {
      const bool surrogate = code_point_ >= 0xD800 && code_point_ <= 0xDFFF;
      if (code_point_ < minimum_ || code_point_ > 0x10FFFF || surrogate) return valid_ = false;
    }
  }
  return true;
}

bool is_valid_utf8(std::string_view text) {
  Utf8Validator validator;
  validator.feed(text);
  return validator.complete();
}

std::string_view utf8_prefix(std::string_view text, std::size_t maximum_bytes) {
  if (text.size() <= maximum_bytes) return text;
  std::size_t end = maximum_bytes;
  // A continuation byte (10xxxxxx) at the cut means the cut falls inside a character.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace deskd
