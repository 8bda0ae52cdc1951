#pragma once
// UTF-8 checks for the file tools: a file is shown to a model only when it is text, and
// a long line is cut only between characters.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace deskd {

/// Checks UTF-8 fed in pieces, so a file can be checked while it streams past without
/// keeping it. Overlong forms, surrogates and code points past U+10FFFF are invalid.
class Utf8Validator {
 public:
  /// Checks the next bytes; false once anything fed so far is invalid.
  bool feed(std::string_view bytes);
  /// Whether nothing invalid was seen (a sequence may still be open at the end).
  bool valid_so_far() const { return valid_; }
  /// Whether everything fed is valid and ends on a character boundary.
  bool complete() const { return valid_ && remaining_ == 0; }

 private:
  bool valid_ = true;
  int remaining_ = 0;          // continuation bytes still expected
  std::uint32_t code_point_ = 0;
  std::uint32_t minimum_ = 0;  // smallest code point this length may encode
};

/// Whether `text` is valid UTF-8.
bool is_valid_utf8(std::string_view text);

/// The longest prefix of the valid UTF-8 `text` that is at most `maximum_bytes` long and
/// does not end inside a character.
std::string_view utf8_prefix(std::string_view text, std::size_t maximum_bytes);

}  // namespace deskd
