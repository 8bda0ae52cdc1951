#include "base/terminal_text.h"

#include <cstdint>

namespace deskd {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// One character of the text as the escaping sees it.
enum class Kind {
  ordinary,     // printed as it is
  line_break,   // '\n'
  tab,          // '\t'
  control,      // the rest of C0, and DEL: a terminal acts on them
  invalid,      // a byte that is not part of valid UTF-8
  format,       // C1 controls, bidi controls, invisible and zero-width code points
  slash_alike,  // a printable character that looks like '/'
};

struct Character {
  Kind kind = Kind::ordinary;
  std::uint32_t code_point = 0;
  std::size_t length = 1;  // its bytes in the text
};

// Code points a terminal or a reader would act on without showing them: C1 controls (some
// terminals take U+009B as CSI), bidi embeddings, overrides and isolates (they reorder what
// follows), and characters that take no room (they hide or join what is around them).
bool is_format_code_point(std::uint32_t c) {
  return (c >= 0x80 && c <= 0x9F) || c == 0xAD || c == 0x34F || c == 0x61C || c == 0x115F || c == 0x1160 ||
         c == 0x17B4 || c == 0x17B5 || (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) ||
         (c >= 0x2028 && c <= 0x202E) || (c >= 0x2060 && c <= 0x206F) || c == 0x3164 || c == 0xFEFF ||
         c == 0xFFA0 || (c >= 0xFFF9 && c <= 0xFFFB) || c == 0x1D173 || (c >= 0x1D174 && c <= 0x1D17A) ||
         (c >= 0xE0000 && c <= 0xE007F);
}

// Characters drawn like '/' (Unicode's confusables of U+002F, and the overlays that draw a
// slash through the character before them). Ordinary in prose, but in a path they make
// `zz∕var∕lib∕plan.md` read as a folder.
bool is_slash_alike(std::uint32_t c) {
  switch (c) {
    case 0x0337: case 0x0338: case 0x1735: case 0x2041: case 0x2044: case 0x2215: case 0x2571:
    case 0x27CB: case 0x29F8: case 0x2CC6: case 0x2F03: case 0x3033: case 0x31D3: case 0x4E3F:
    case 0xFF0F: case 0x1D23A:
      return true;
    default:
      return false;
  }
}

// The character at `index`: a whole UTF-8 sequence, or one invalid byte. Overlong forms,
// surrogates and code points past U+10FFFF are invalid, as are cut sequences.
Character character_at(std::string_view text, std::size_t index) {
  const auto byte = static_cast<unsigned char>(text[index]);
  if (byte < 0x80) {
    if (byte == '\n') return {Kind::line_break, byte, 1};
    if (byte == '\t') return {Kind::tab, byte, 1};
    if (byte < 0x20 || byte == 0x7F) return {Kind::control, byte, 1};
    return {Kind::ordinary, byte, 1};
  }
  std::size_t length = 0;
  std::uint32_t code_point = 0, minimum = 0;
  if (byte >= 0xC2 && byte <= 0xDF) {
    length = 2, code_point = byte & 0x1F, minimum = 0x80;
  } else if (byte >= 0xE0 && byte <= 0xEF) {
    length = 3, code_point = byte & 0x0F, minimum = 0x800;
  } else if (byte >= 0xF0 && byte <= 0xF4) {
    length = 4, code_point = byte & 0x07, minimum = 0x10000;
  } else {
    return {Kind::invalid, byte, 1};
  }
  if (index + length > text.size()) return {Kind::invalid, byte, 1};
  for (std::size_t offset = 1; offset < length; ++offset) {
    const auto next = static_cast<unsigned char>(text[index + offset]);
    if ((next & 0xC0) != 0x80) return {Kind::invalid, byte, 1};
    code_point = (code_point << 6) | (next & 0x3F);
  }
  if (code_point < minimum || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    return {Kind::invalid, byte, 1};
  }
  if (is_format_code_point(code_point)) return {Kind::format, code_point, length};
  if (is_slash_alike(code_point)) return {Kind::slash_alike, code_point, length};
  return {Kind::ordinary, code_point, length};
}

void append_hex(std::string& out, std::uint32_t value, int digits) {
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHexDigits[(value >> shift) & 0x0F];
}

// The escaped form of a character terminal_text would not print as it is, in the spelling
// bash's $'...' reads back: \e, \n, \t, \r, \xNN (one byte), \uXXXX, \UXXXXXXXX.
void append_escaped(std::string& out, const Character& character) {
  switch (character.kind) {
    case Kind::line_break: out += "\\n"; return;
    case Kind::tab: out += "\\t"; return;
    case Kind::control:
      if (character.code_point == 0x1B) {
        out += "\\e";
      } else if (character.code_point == '\r') {
        out += "\\r";
      } else {
        out += "\\x";
        append_hex(out, character.code_point, 2);
      }
      return;
    case Kind::invalid:
      out += "\\x";
      append_hex(out, character.code_point, 2);
      return;
    case Kind::format:
    case Kind::slash_alike:
    case Kind::ordinary:
      out += character.code_point > 0xFFFF ? "\\U" : "\\u";
      append_hex(out, character.code_point, character.code_point > 0xFFFF ? 8 : 4);
      return;
  }
}

bool is_plain_path_byte(char byte) {
  return (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
         std::string_view("/._-+,:@%").find(byte) != std::string_view::npos;
}

}  // namespace

std::string terminal_text(std::string_view text, LineBreaks line_breaks) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t index = 0; index < text.size();) {
    const Character character = character_at(text, index);
    const bool kept_break = line_breaks == LineBreaks::kept && (character.kind == Kind::line_break || character.kind == Kind::tab);
    if (character.kind == Kind::ordinary || character.kind == Kind::slash_alike || kept_break) {
      out.append(text.substr(index, character.length));
    } else {
      append_escaped(out, character);
    }
    index += character.length;
  }
  return out;
}

std::string terminal_path(std::string_view path) {
  bool needs_escapes = false, needs_quotes = path.empty(), slash_alike = false;
  for (std::size_t index = 0; index < path.size();) {
    const Character character = character_at(path, index);
    if (character.kind == Kind::slash_alike) slash_alike = true;
    if (character.kind != Kind::ordinary) {
      needs_escapes = true;
    } else if (character.code_point < 0x80 && !is_plain_path_byte(static_cast<char>(character.code_point))) {
      needs_quotes = true;
    }
    index += character.length;
  }
  if (!needs_escapes && !needs_quotes) return std::string(path);

  std::string out = needs_escapes ? "$'" : "'";
  for (std::size_t index = 0; index < path.size();) {
    const Character character = character_at(path, index);
    if (character.kind != Kind::ordinary) {
      append_escaped(out, character);
    } else if (path[index] == '\'') {
      out += needs_escapes ? "\\'" : "'\\''";
    } else if (path[index] == '\\' && needs_escapes) {
      out += "\\\\";
    } else {
      out.append(path.substr(index, character.length));
    }
    index += character.length;
  }
  out += '\'';
  if (slash_alike) out += kLookAlikeSlashMark;
  return out;
}

}  // namespace deskd
