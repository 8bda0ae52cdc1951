#pragma once
// The desk's file tools as the security suite asks them: one `deskd mcp` session, run as the
// root or the unprivileged daemon on a TestDesk with the same --desk/--hide flags its
// sandboxes get, fed a batch of tools/call requests on standard input and read to its end.

#include <string>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {

/// One tools/call: the tool's name and its arguments as a JSON object's text.
struct ToolCall {
  std::string tool;
  std::string arguments_json;
};

/// What the tool answered: its text and isError; answered is false when no reply came.
struct ToolAnswer {
  bool answered = false;
  bool is_error = true;
  std::string text;
};

/// The JSON text of a string, quotes included.
std::string json_string(const std::string& text);

/// Runs `deskd mcp <desk arguments> EXTRA...`, initializes, sends every call and closes its
/// input; returns one answer per call, in order. `run` receives deskd's whole run, for
/// failure messages.
std::vector<ToolAnswer> call_tools(Daemon daemon, const TestDesk& desk, const std::vector<ToolCall>& calls,
                                   SandboxRun* run = nullptr, const std::vector<std::string>& extra_arguments = {});

}  // namespace deskd::security_testing
