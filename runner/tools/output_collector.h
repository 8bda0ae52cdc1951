#pragma once
// OutputCollector: what one command printed, decoded as UTF-8 across read boundaries
// (invalid bytes become U+FFFD) and kept within a bound however much is printed: the
// start and the end are kept, the middle is only counted.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace deskd::tools {

class OutputCollector {
 public:
  /// Keeps at most `maximum_characters` Unicode characters in the final text.
  explicit OutputCollector(std::size_t maximum_characters);

  /// Adds raw bytes as they were read; a character split between calls is joined.
  void append(std::string_view bytes);

  /// Ends the text: an unfinished UTF-8 sequence becomes U+FFFD.
  void finish();

  /// The text so far: everything when it fits, otherwise its start and its end with one line
  /// between them saying how many characters were left out. At most the maximum.
  std::string text() const;

  /// Whether characters were left out of text().
  bool truncated() const { return total_characters_ > maximum_characters_; }

  /// How many characters have been added in all.
  std::uint64_t total_characters() const { return total_characters_; }

  /// Forgets everything, for the next command.
  void reset();

 private:
  void add_character(std::string_view encoded);
  void add_ascii(std::string_view run);
  void trim_tail();

  std::size_t maximum_characters_;
  std::string head_;                 // the first characters, up to the maximum
  std::size_t head_characters_ = 0;
  std::string tail_;                 // the latest characters once the head is full
  std::size_t tail_characters_ = 0;
  std::uint64_t total_characters_ = 0;
  unsigned char pending_[4] = {};    // an unfinished UTF-8 sequence from the last append
  std::size_t pending_length_ = 0;
};

}  // namespace deskd::tools
