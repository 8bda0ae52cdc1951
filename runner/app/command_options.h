#pragma once
// The options `deskd run`, `shell` and `mcp` share — the desk folder, its sandbox, bash's
// limits, the proposals folder — added to a command's CLI11 parser. Each value is checked
// by the same take_sandbox_option()/take_desk_tool_option() the lean `deskd sandbox` uses,
// so a value refused there is refused here with the same sentence.

#include <string>

#include "base/unique_fd.h"

#include "base/command_line.h"
#include "runner/app/deskd_command.h"
#include "runner/app/desk_tool_options.h"

namespace deskd::app {

/// Adds --desk DIR (described by `description`) to `command`.
void add_desk_option(CLI::App& command, SandboxOptions& options, const std::string& description);

/// Adds every sandbox option but --desk: --hide, --net, --allow, --memory, --pids,
/// --file-size, --open-files, --read-only, --host-view, --uid, --gid, --hostname, --env,
/// --allow-supplementary-groups.
void add_sandbox_options(CLI::App& command, SandboxOptions& options);

/// Adds --desk and the sandbox options, then --timeout, --max-output and --proposals.
void add_desk_tool_options(CLI::App& command, DeskToolOptions& options);

/// Tells a usage mistake of `deskd COMMAND` and where its help is; returns 2, the exit status.
int usage_error(const std::string& command, const std::string& message);

/// A close-on-exec copy of `fd` above the standard streams: a command's server talks on its
/// own copies of stdin and stdout, so that closing them when it ends leaves the process's
/// own descriptors alone.
UniqueFd duplicate_descriptor(int fd);

}  // namespace deskd::app
