#include "runner/desk/front_matter.h"

#include <algorithm>
#include <vector>

#include "base/ascii_text.h"

namespace deskd::desk {
namespace {

// Blanks within a line (a carriage return from a CRLF file included).
constexpr std::string_view kWhitespace = " \t\r";

bool is_key_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool is_delimiter(std::string_view line) { return trim(line, kWhitespace) == "---" && line.starts_with("---"); }

// In a plain YAML value, " #" starts a comment; a '#' inside a word does not.
std::string_view without_comment(std::string_view value) {
  for (std::size_t index = 1; index < value.size(); ++index) {
    if (value[index] == '#' && (value[index - 1] == ' ' || value[index - 1] == '\t')) {
      return trim(value.substr(0, index), kWhitespace);
    }
  }
  return value.starts_with('#') ? std::string_view{} : value;
}

// Reads a quoted value; nullopt when it is not closed on its line or is followed by more
// than a comment.
std::optional<std::string> unquote(std::string_view value) {
  const char quote = value.front();
  std::string result;
  std::size_t index = 1;
  for (;; ++index) {
    if (index >= value.size()) return std::nullopt;
    const char c = value[index];
    if (quote == '\'' && c == '\'') {
      if (index + 1 < value.size() && value[index + 1] == '\'') {  // '' is a quote
        result += '\'';
        ++index;
        continue;
      }
      break;
    }
    if (quote == '"' && c == '"') break;
    if (quote == '"' && c == '\\' && index + 1 < value.size()) {
      const char escaped = value[++index];
      switch (escaped) {
        case 'n': result += '\n'; break;
        case 't': result += '\t'; break;
        case '"':
        case '\\':
        case '/': result += escaped; break;
        default:
          result += '\\';
          result += escaped;
          break;  // kept as written
      }
      continue;
    }
    result += c;
  }
  const std::string_view rest = trim(value.substr(index + 1), kWhitespace);
  if (!rest.empty() && !rest.starts_with('#')) return std::nullopt;
  return result;
}

// "|", ">", optionally with a chomping sign and an indentation digit, then perhaps a
// comment. A plain value that merely starts with '>' (">50 lots") is not one.
bool is_block_indicator(std::string_view value) {
  if (!value.starts_with('|') && !value.starts_with('>')) return false;
  std::size_t index = 1;
  while (index < value.size() && index <= 2 &&
         (value[index] == '+' || value[index] == '-' ||
          (value[index] >= '1' && value[index] <= '9'))) {
    ++index;
  }
  const std::string_view rest = trim(value.substr(index), kWhitespace);
  return rest.empty() || (rest.starts_with('#') && index < value.size() && value[index] != '#');
}

enum class Continuation { none, plain, literal_block, folded_block, nested };

// Joins a block value's lines: | keeps line breaks, > folds them into spaces (a blank
// line stays a line break).
std::string join_block(const std::vector<std::string_view>& lines, bool folded) {
  std::size_t indent = std::string_view::npos;
  for (const auto line : lines) {
    if (!trim(line, kWhitespace).empty()) indent = std::min(indent, line.find_first_not_of(" \t"));
  }
  std::string joined;
  for (const auto line : lines) {
    const std::string_view content = trim(line, kWhitespace).empty() ? std::string_view{} : line.substr(indent);
    if (!joined.empty() || !content.empty()) {
      if (!joined.empty())
        joined += folded && !content.empty() && joined.back() != '\n' ? " " : "\n";
      joined += content;
    }
  }
  return std::string(trim(joined, kWhitespace));
}

// The body without the blank lines around it; the first line keeps its indentation.
std::string body_of(std::string_view rest) {
  const auto first = rest.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto line_start = rest.rfind('\n', first);
  rest.remove_prefix(line_start == std::string_view::npos ? 0 : line_start + 1);
  return std::string(rest.substr(0, rest.find_last_not_of(" \t\r\n") + 1));
}

}  // namespace

const FrontMatterField* FrontMatter::find(std::string_view key) const {
  const auto found = fields.find(key);
  return found == fields.end() ? nullptr : &found->second;
}

FrontMatterParse parse_front_matter(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const auto failure = [](std::size_t line, std::string why) {
    return FrontMatterParse{std::nullopt, line, std::move(why)};
  };
  FrontMatter parsed;
  FrontMatterField* current = nullptr;  // the field indented lines continue
  Continuation continuation = Continuation::none;
  std::vector<std::string_view> block;
  const auto finish_block = [&] {
    if (current != nullptr && (continuation == Continuation::literal_block ||
                               continuation == Continuation::folded_block)) {
      current->value = join_block(block, continuation == Continuation::folded_block);
    }
    block.clear();
  };
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_number == 1) {
      if (!is_delimiter(line)) {
        return failure(1,
                       "it has no front matter: its first line must be ---, followed by "
                       "name: and description: lines and another ---.");
      }
      continue;
    }
    if (is_delimiter(line)) {
      finish_block();
      parsed.closing_line = line_number;
      parsed.body = body_of(text);
      return FrontMatterParse{std::move(parsed), 0, {}};
    }
    const bool indented = line.starts_with(' ') || line.starts_with('\t');
    const bool blank = trim(line, kWhitespace).empty();
    const bool block_value =
        continuation == Continuation::literal_block || continuation == Continuation::folded_block;
    if (block_value && (indented || blank)) {
      block.push_back(line);
      continue;
    }
    if (blank || trim(line, kWhitespace).starts_with('#')) continue;
    if (indented || (continuation == Continuation::nested && line.starts_with('-'))) {
      if (continuation == Continuation::plain) {
        const std::string_view more = without_comment(trim(line, kWhitespace));
        if (!more.empty()) current->value += " " + std::string(more);
      } else if (continuation != Continuation::nested) {
        return failure(line_number,
                       "this line is indented, but no key before it takes more lines.");
      }
      continue;
    }
    finish_block();
    const auto colon = line.find(':');
    const std::string_view key = line.substr(0, colon);
    const bool well_formed =
        colon != std::string_view::npos && !key.empty() &&
        std::all_of(key.begin(), key.end(), is_key_character) &&
        (colon + 1 == line.size() || line[colon + 1] == ' ' || line[colon + 1] == '\t');
    if (!well_formed) {
      return failure(line_number, "expected \"key: value\" in the front matter.");
    }
    if (const auto* earlier = parsed.find(key)) {
      return failure(line_number, "the key " + std::string(key) + " is already given on line " +
                                      std::to_string(earlier->line) + ".");
    }
    current =
        &parsed.fields.emplace(std::string(key), FrontMatterField{{}, line_number}).first->second;
    const std::string_view value = trim(line.substr(colon + 1), kWhitespace);
    if (value.starts_with('"') || value.starts_with('\'')) {
      auto unquoted = unquote(value);
      if (!unquoted) {
        return failure(line_number, "the quoted value of " + std::string(key) +
                                        " does not end with its quote on this line.");
      }
      current->value = std::move(*unquoted);
      continuation = Continuation::none;
    } else if (is_block_indicator(value)) {
      continuation =
          value.starts_with('>') ? Continuation::folded_block : Continuation::literal_block;
    } else {
      current->value = std::string(without_comment(value));
      continuation = current->value.empty() ? Continuation::nested : Continuation::plain;
    }
  }
  return failure(1, "its front matter starts with --- on line 1 but no --- line ends it.");
}

}  // namespace deskd::desk
