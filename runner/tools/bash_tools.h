#pragma once
// The desk's terminal as tools: `bash`, `bash_background`, `check_background` and
// `bash_restart`, all sharing one BashSession, so what one command sets (folder, variables)
// the next one sees. Closing the `bash` tool closes the session.

#include <memory>
#include <string>

#include "runner/tools/bash_session.h"
#include "runner/tools/tool.h"

namespace deskd::tools {

class ToolRegistry;

/// Adds the four bash tools over `session` to `registry`.
void add_bash_tools(ToolRegistry& registry, std::shared_ptr<BashSession> session);

/// How a command's outcome reads for a model: the output, then a last line with the exit
/// status ("[exit status 2]", or "[no exit status]"). An error exactly when there is no
/// status: the session could not run the command to its end (it ran too long, the terminal
/// is closed, the sandbox could not start). A nonzero status is an answer, not a failure.
/// An outcome whose terminal did not start also ends the turn (ToolResult::ends_turn).
ToolResult bash_result(CommandOutcome outcome);

/// The sentence a turn fails with when the outcome's terminal could not start (naming the
/// step that failed); "" when it started.
std::string turn_ending(const CommandOutcome& outcome);

}  // namespace deskd::tools
