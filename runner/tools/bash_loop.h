#pragma once
// The loop that runs inside the sandboxed bash (`bash -c`): it reads one command at a time
// as a frame (bash_loop_frame), runs it with eval — in the shell itself, so folders,
// variables, functions and aliases carry over — and reports "<id> <status>" on a pipe of
// its own, never through the command's output.
//
// The descriptors bash starts with: 0 /dev/null (read and write), 1 and 2 the output pipe,
// 3 the report pipe, 4 the command pipe. The loop's outer group closes all five, so bash
// keeps them as copies at 10 + n (10 /dev/null, 11 the output, 13 the reports, 14 the
// commands), which bash marks close-on-exec: no program a command starts inherits the
// report or the command pipe, and while the loop waits, descriptors 0, 1 and 2 are closed.
//
// Why it is shaped like this (every bash redirection of an open descriptor is some eight
// system calls: bash saves, moves and restores it; of a closed one, two):
// - the eval's own redirections give each command /dev/null, the output and the output
//   again as 0, 1 and 2, by dup2 from the kept copies: no open of /dev/null per command,
//   nothing to save (they were closed), one close each afterwards. A command that moves
//   its own descriptors (`exec >file`, `exec <file`) moves them for itself: the next
//   command again reads /dev/null and writes to the output.
// - the report and the reads of the next command are one block in the loop's condition,
//   where $? is still the eval's status, with standard output on the report pipe and
//   standard error on /dev/null; a DEBUG trap's output there goes to the report pipe,
//   where deskd finds the report by its id and drops everything else.
// - a frame is "<id><length><mode><command>": a 16-hex-digit id (64 random bits), the
//   command's length in 8 hex digits and 'r' (as is) or 'e' (escaped); bash reads the
//   first 25 characters and then exactly the command with `read -N` (a pipe read in one
//   system call each, where a delimited read takes one per byte). `read -N` counts
//   characters of the locale, so a command with bytes above 127 comes escaped as ASCII
//   (those bytes and every backslash as \xHH) and is decoded by `printf -v %b`.
// - the loop's reads wait for the next command for as long as it takes: TMOUT, which a
//   command may set (bash takes it as read's default timeout), is empty for them.
// - a command may define functions named read, printf, set, eval or [ and keep them: the
//   loop calls the builtins by `builtin` and tests with the [[ keyword, so such a function
//   neither swallows the next command nor runs in the loop's place. read goes by `command`:
//   bash 5.2 spends some 35,000 more instructions on a `builtin` with variable assignments
//   before it. A function named `builtin` or `command`, `enable -n`, a readonly TMOUT or a
//   command that closes or replaces descriptors 10 to 14 still break the loop; bash then
//   ends or the command times out, and the desk gets a fresh terminal.
// - eval of a whole string: a syntax error, an unclosed quote or an unterminated heredoc is
//   an error status from eval, not a shell waiting for more input or dying.
// - the loop was parsed once, before any command ran, so `set -v` cannot echo it; `set -x`
//   and `set -v` are switched off while the loop reports (what they trace of that goes to
//   /dev/null) and switched back on inside the next eval, so traces show only the
//   command's own lines. Checking $- with `case` first keeps the common case (neither
//   set) to one pattern match.

#include <cstddef>
#include <string>
#include <string_view>

namespace deskd::tools {

/// The length of a command's id: 16 hex digits, 64 random bits.
inline constexpr std::size_t kBashLoopIdCharacters = 16;

inline constexpr std::string_view kBashLoopScript =
    "shopt -s expand_aliases\n"
    "__deskd_flags= __deskd_header=\n"
    "{ while { __deskd_status=$?\n"
    "          case $- in *[xv]*) __deskd_flags=${-//[^xv]/}; builtin set +xv;; *) __deskd_flags=;; esac\n"
    "          [[ -z $__deskd_header ]] || builtin printf '%s %s\\n' \"${__deskd_header:0:16}\" \"$__deskd_status\"\n"
    "          TMOUT= command read -r -N 25 -u 14 __deskd_header &&\n"
    "          TMOUT= command read -r -N $((16#${__deskd_header:16:8})) -u 14 __deskd_command &&\n"
    "          case $__deskd_header in *e) builtin printf -v __deskd_command %b \"$__deskd_command\";; esac\n"
    "        } >&13 2>&10; do\n"
    "    builtin eval \"${__deskd_flags:+builtin set -$__deskd_flags;}$__deskd_command\" <&10 >&11 2>&1\n"
    "  done\n"
    "} 0<&- 1>&- 2>&- 3>&- 4<&-\n";

/// The frame that hands `command` to the loop under `id` (kBashLoopIdCharacters hex
/// digits); empty when the command is too long for its 8-hex-digit length.
std::string bash_loop_frame(std::string_view id, std::string_view command);

/// Where the report "<id> <status>\n" ends in `reports` (what the report pipe gave, which
/// may hold a DEBUG trap's output around it), and its status; npos when it is not there.
struct BashLoopReport {
  std::size_t end = std::string_view::npos;
  int status = 0;
};
BashLoopReport find_bash_loop_report(std::string_view reports, std::string_view id);

}  // namespace deskd::tools
