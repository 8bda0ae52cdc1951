#pragma once
// Front matter of a Markdown file (as Agent Skills' SKILL.md uses it): `key: value` lines
// between two `---` lines, then the body. Only the YAML that front matter needs is
// understood: plain, quoted ("..." and '...') and block (| and >) values, plain values
// continued on indented lines, comments, and nested maps or lists, which are skipped.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace deskd::desk {

/// One top-level value and the line its key is on.
struct FrontMatterField {
  std::string value;  ///< Unquoted and trimmed; empty for a nested map or list.
  std::size_t line = 0;
};

/// A parsed document.
struct FrontMatter {
  std::map<std::string, FrontMatterField, std::less<>> fields;
  std::size_t closing_line = 0;  ///< The line of the closing `---`.
  std::string body;              ///< After the front matter; blank lines around it trimmed.

  /// The field `key`, or nullptr.
  const FrontMatterField* find(std::string_view key) const;
};

/// A parsed document, or the line (1-based) and the reason it could not be parsed.
struct FrontMatterParse {
  std::optional<FrontMatter> front_matter;
  std::size_t line = 0;
  std::string why;  ///< A sentence, when front_matter is empty.
};

/// Parses `text`; a missing or unclosed front matter, a line that is not `key: value`, a
/// repeated key or an unclosed quote is a failure naming its line.
FrontMatterParse parse_front_matter(std::string_view text);

}  // namespace deskd::desk
