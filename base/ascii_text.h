#pragma once
// ASCII case and blank tests, and trimming, for protocol text (header names, host names, an
// API's error words): the C locale's, whatever the process locale is. Declared once for the
// tree.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace deskd {

inline char ascii_lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

inline std::string lowercase(std::string_view text) {
  std::string lowered(text);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), ascii_lower);
  return lowered;
}

inline std::string uppercase(std::string_view text) {
  std::string raised(text);
  std::transform(raised.begin(), raised.end(), raised.begin(),
                 [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; });
  return raised;
}

inline bool equals_ignoring_case(std::string_view left, std::string_view right) {
  return std::equal(left.begin(), left.end(), right.begin(), right.end(),
                    [](char a, char b) { return ascii_lower(a) == ascii_lower(b); });
}

inline bool contains_ignoring_case(std::string_view text, std::string_view part) {
  return std::search(text.begin(), text.end(), part.begin(), part.end(),
                     [](char a, char b) { return ascii_lower(a) == ascii_lower(b); }) != text.end();
}

/// Empty or only white space.
inline bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

/// `text` without the `characters` (by default the C locale's white space) at either end.
inline std::string_view trim(std::string_view text, std::string_view characters = " \t\n\v\f\r") {
  const auto first = text.find_first_not_of(characters);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(characters) - first + 1);
}

}  // namespace deskd
