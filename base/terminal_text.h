#pragma once
// Text a desk controls (its bash output, its model's words, file names, proposal paths and
// reasons, error texts), made safe to print on a person's terminal: nothing in it can move
// the cursor, erase or rewrite lines, set the window title, reorder what is shown (bidi
// controls) or hide characters (zero-width code points). What a desk wrote is shown, never
// obeyed. deskctl prints every desk-controlled byte through these two functions, and the
// file tools show names to the model through them; `--json` output is never passed through
// them (JSON escapes on its own and scripts need the exact bytes).

#include <string>
#include <string_view>

namespace deskd {

/// Whether the line breaks (and tabs) of a text are part of it, as in bash output, a diff or
/// a model's reply, or must not break the one line it is printed on, as in a name or an id.
enum class LineBreaks { kept, escaped };

/// `text` with everything a terminal would obey shown escaped, and every other character
/// (ordinary non-ASCII letters included) as it was:
///   ESC \e; CR \r; newline \n and tab \t (unless LineBreaks::kept); every other C0 control
///   and DEL \xNN; a byte that is not part of valid UTF-8 \xNN; C1 controls (U+0080-U+009F),
///   bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), invisible and
///   zero-width code points (U+200B-U+200D, U+2060-U+2064, U+FEFF, U+00AD, U+180E, U+2028,
///   U+2029, tags U+E0000-U+E007F, ...) \uXXXX (\UXXXXXXXX past U+FFFF).
/// A backslash is not doubled, so the text reads as written; escaped forms are for eyes.
std::string terminal_text(std::string_view text, LineBreaks line_breaks = LineBreaks::escaped);

/// The suffix terminal_path adds to a path that holds a look-alike of '/'.
inline constexpr std::string_view kLookAlikeSlashMark = " [look-alike of '/' in this name: not a folder separator]";

/// `path` for a terminal, quoted the way `ls --quoting-style=shell-escape` quotes: as it is
/// when it holds only letters, digits and / . _ - + , : @ %; in '...' when it holds other
/// printable characters (a space, a quote, $, *, ...); in $'...' with the escapes of
/// terminal_text (plus \\ and \') when it holds anything terminal_text would escape or a
/// look-alike of '/' (U+2215, U+2044, U+29F8, U+FF0F, U+1735, U+2571, ... shown \uXXXX).
/// Either quoted form, pasted into bash, gives back the exact bytes. A path with a
/// look-alike of '/' ends with kLookAlikeSlashMark, so that `a∕b` never reads as a folder.
std::string terminal_path(std::string_view path);

}  // namespace deskd
