#pragma once
// The loop that runs inside the sandboxed bash (`bash -c`): it reads one command at a time
// from its standard input as "<id><command>\0", runs it with eval — in the shell itself,
// so folders, variables, functions and aliases carry over — and reports "<id> <status>"
// on descriptor 3.
//
// Why it is shaped like this:
// - the id has a fixed length, so `read -N` takes it in one system call; bash reads a pipe
//   a byte at a time up to a delimiter (it cannot give back what it read past it), and the
//   16 reads of a delimited id were a fifth of the warm round trip's system calls.
// - the loop's reads wait for the next command for as long as it takes: TMOUT, which a
//   command may set (bash takes it as read's default timeout), is empty for them.
// - a command may define functions named read, printf, set, eval or [ and keep them: the
//   loop calls the builtins by `builtin` and tests with the [[ keyword, so such a function
//   neither swallows the next command nor runs in the loop's place. read goes by `command`:
//   bash 5.2 spends some 35,000 more instructions on a `builtin` with variable assignments
//   before it (callgrind: 283,000 instructions a command against 212,000). A function named
//   `builtin` or `command`, `enable -n`, or a readonly IFS or TMOUT still break the loop;
//   bash then ends or the command times out, and the desk gets a fresh terminal.
// - eval of a whole string: a syntax error, an unclosed quote or an unterminated heredoc is
//   an error status from eval, not a shell waiting for more input or dying.
// - the command reads /dev/null, and descriptor 3 is closed for it, so neither its output
//   nor what it reads can touch the reports; the id is new for every command.
// - the loop was parsed once, before any command ran, so `set -v` cannot echo it; `set -x`
//   and `set -v` are switched off while the loop reports (with every trace of that switch
//   sent to /dev/null) and switched back on inside the next eval, so traces show only the
//   command's own lines. A DEBUG trap's output during the report also goes to /dev/null.
// - the report of one command and the reading of the next are one block in the loop's
//   condition, where $? is still the eval's status: each redirection is some eight system
//   calls (bash saves, moves and restores the descriptor), and one block has half the
//   redirections of two.

#include <cstddef>
#include <string_view>

namespace deskd::tools {

/// The length of a command's id: 16 hex digits, 64 random bits. The script's `-N 16`.
inline constexpr std::size_t kBashLoopIdCharacters = 16;

inline constexpr std::string_view kBashLoopScript =
    "shopt -s expand_aliases\n"
    "__deskd_flags= __deskd_id=\n"
    "while { __deskd_status=$?; __deskd_flags=${-//[^xv]/}; builtin set +xv\n"
    "        [[ -z $__deskd_id ]] || builtin printf '%s %s\\n' \"$__deskd_id\" \"$__deskd_status\" >&3\n"
    "        TMOUT= IFS= command read -r -N 16 __deskd_id &&\n"
    "        TMOUT= IFS= command read -r -d '' __deskd_command; } >/dev/null 2>&1; do\n"
    "  builtin eval \"${__deskd_flags:+builtin set -$__deskd_flags;}$__deskd_command\" </dev/null 3>&-\n"
    "done\n";

}  // namespace deskd::tools
