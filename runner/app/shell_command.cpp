#include "runner/app/shell_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <cstdio>
#include <string>

#include "runner/app/command_options.h"
#include "runner/app/desk_tool_options.h"
#include "runner/mcp/line_stream.h"
#include "runner/mcp/mcp_server.h"
#include "runner/tools/bash_session.h"
#include "runner/tools/json_text.h"

namespace deskd::app {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

constexpr const char* kShellDescription =
    "Reads commands from standard input, one a line, and runs each in the desk's bash: one\n"
    "long-lived bash in the desk's sandbox, as the desk's model uses it. Prints what each\n"
    "command printed and, when it is not 0, its exit status as \"[exit N]\". Ends at the\n"
    "end of input (Ctrl-D); `exit` ends only the bash, which starts afresh.\n"
    "\n"
    "Exit status: 0 at the end of input; 1 if output cannot be written; 2 for bad usage or a\n"
    "desk that cannot be set up; 128+N after signal N.";

// The longest command line; a JSON call may be as long as an MCP message (a whole file to
// write).
constexpr std::size_t kMaximumCommandBytes = std::size_t{1} << 20;

void log_escaped(std::exception_ptr escaped) {
  if (escaped) std::fputs("deskd shell: closing the terminal failed\n", stderr);
}

std::string reply_line(const tools::ToolResult& result) {
  json::object reply{{"content", tools::valid_utf8(result.text)},
                     {"is_error", result.is_error},
                     {"exit_status", nullptr},
                     {"truncated", result.truncated}};
  if (result.exit_status) reply["exit_status"] = *result.exit_status;
  return json::serialize(reply);
}

// What one line of --json input asks for: the tool and its input, or why it cannot be read.
struct JsonCall {
  std::string tool;
  json::object input;
  std::string problem;
};

JsonCall parse_call(std::string_view line) {
  std::error_code error;
  json::value parsed = json::parse(line, error);
  if (error) return {{}, {}, "The line is not JSON (" + error.message() + "); send one object a line."};
  const json::object* call = parsed.if_object();
  const json::value* tool = call != nullptr ? call->if_contains("tool") : nullptr;
  if (tool == nullptr || !tool->is_string()) {
    return {{}, {}, R"(The line needs to be an object with a string "tool", like {"tool": "bash", "input": {"command": "ls"}}.)"};
  }
  JsonCall result{std::string(tool->as_string()), {}, {}};
  if (const json::value* input = call->if_contains("input"); input != nullptr && !input->is_null()) {
    if (!input->is_object()) return {{}, {}, R"("input" must be an object.)"};
    result.input = input->as_object();
  }
  return result;
}

awaitable<int> serve_json(tools::ToolRegistry& registry, tools::LineReader& reader, tools::LineWriter& writer,
                          std::size_t maximum_line_bytes) {
  // One call at a time, in order: a script reads one answer a line, in the order it asked.
  while (std::optional<tools::LineReader::Line> line = co_await reader.read_line()) {
    if (line->text.find_first_not_of(" \t") == std::string::npos && !line->too_long) continue;
    tools::ToolResult result;
    if (line->too_long) {
      result = tools::ToolResult::failure("The line is longer than " + std::to_string(maximum_line_bytes) +
                                          " bytes and was skipped.");
    } else if (JsonCall call = parse_call(line->text); !call.problem.empty()) {
      result = tools::ToolResult::failure(std::move(call.problem));
    } else {
      result = co_await registry.call(call.tool, call.input);
    }
    writer.write_line(reply_line(result));
    if (!co_await writer.flush()) break;
  }
  co_await registry.close();
  co_return writer.failed() ? 1 : 0;
}

awaitable<int> serve_terminal(tools::BashSession& session, tools::LineReader& reader, tools::LineWriter& writer,
                              std::string prompt) {
  // The prompt goes to stderr, and only for a person at a terminal: stdout stays exactly
  // what the commands printed.
  const bool interactive = ::isatty(0) == 1;
  for (;;) {
    if (interactive) std::fputs(prompt.c_str(), stderr);
    std::optional<tools::LineReader::Line> line = co_await reader.read_line();
    if (!line) break;
    if (line->too_long) {
      std::fprintf(stderr, "deskd shell: the line is longer than %zu bytes and was skipped.\n", kMaximumCommandBytes);
      continue;
    }
    if (line->text.find_first_not_of(" \t") == std::string::npos) continue;
    tools::CommandOutcome outcome = co_await session.run(std::move(line->text));
    if (!outcome.output.empty()) {
      if (outcome.output.back() == '\n') outcome.output.pop_back();
      writer.write_line(std::move(outcome.output));
    }
    if (outcome.exit_status && *outcome.exit_status != 0) {
      writer.write_line("[exit " + std::to_string(*outcome.exit_status) + "]");
    }
    if (!co_await writer.flush()) break;
  }
  if (interactive) std::fputc('\n', stderr);
  co_await session.close();
  co_return writer.failed() ? 1 : 0;
}

int run_shell(const DeskToolOptions& options, bool json_lines) {
  UniqueFd input = duplicate_descriptor(0);
  UniqueFd output = duplicate_descriptor(1);
  if (!input || !output) {
    std::fputs("deskd shell: standard input and output must be open.\n", stderr);
    return 2;
  }

  asio::io_context io;
  auto settings = build_desk_tool_settings(options, io.get_executor());
  if (!settings.ok()) return usage_error("shell", settings.error().what);
  const std::size_t maximum_line_bytes = json_lines ? tools::McpServer::kMaximumMessageBytes : kMaximumCommandBytes;
  tools::LineReader reader(io.get_executor(), std::move(input), maximum_line_bytes);
  tools::LineWriter writer(io.get_executor(), std::move(output));
  if (json_lines) {
    tools::ToolRegistry registry = tools::make_desk_tools(io.get_executor(), std::move(*settings));
    return run_until_done(io, serve_json(registry, reader, writer, maximum_line_bytes), [&] {
      reader.cancel();
      asio::co_spawn(io, registry.close(), log_escaped);
    });
  }
  const std::string prompt = settings->desk_name + "$ ";
  tools::BashSession session(io.get_executor(), std::move(settings->sandbox), settings->timeout_seconds,
                             settings->maximum_output_characters);
  return run_until_done(io, serve_terminal(session, reader, writer, prompt), [&] {
    reader.cancel();
    asio::co_spawn(io, session.close(), log_escaped);
  });
}

}  // namespace

DeskdCommand add_shell_command(CLI::App& deskd) {
  auto* command =
      deskd.add_subcommand("shell", "type commands into a desk's sandboxed bash (or call its tools as JSON)");
  command->footer(kShellDescription);
  struct Options {
    DeskToolOptions tools;
    bool json_lines = false;
  };
  auto options = std::make_shared<Options>();
  add_desk_tool_options(*command, options->tools);
  command->add_flag("--json", options->json_lines,
                    "call any of the desk's tools instead: one JSON object a line in, {\"tool\": \"bash\", "
                    "\"input\": {\"command\": \"ls\"}}, and one a line out, {\"content\": \"...\", \"is_error\": "
                    "false, \"exit_status\": 0, \"truncated\": false} (exit_status is null when there is none)");
  return {command, [options] { return run_shell(options->tools, options->json_lines); }};
}

}  // namespace deskd::app
