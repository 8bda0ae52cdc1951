#pragma once
// What the isolation end-to-end tests share: a script turn built from tool calls, the
// outcome of each call as the desk's events report it (TOOL_CALLED paired with its
// TOOL_FINISHED), and the probes a desk runs, copied into the desk's own folder so that they
// are in sight under any host view.

#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"

namespace deskd::e2e {

/// One tool call of a scripted turn.
struct ScriptedCall {
  std::string tool;
  boost::json::object input;
};

/// A script line: one step making every call, then a closing text.
inline std::string scripted_turn(const std::vector<ScriptedCall>& calls) {
  boost::json::array tool_calls;
  for (const auto& call : calls) tool_calls.push_back(boost::json::object{{"name", call.tool}, {"input", call.input}});
  const boost::json::object step{{"text", "trying"}, {"tool_calls", std::move(tool_calls)}};
  const boost::json::object turn{{"steps", boost::json::array{step, boost::json::object{{"text", "tried"}}}}};
  return boost::json::serialize(turn) + "\n";
}

inline ScriptedCall bash_call(const std::string& command) { return {"bash", {{"command", command}}}; }

/// What one tool call of a turn did, from its events.
struct ToolOutcome {
  std::string tool;
  boost::json::object input;
  bool is_error = true;
  std::string text;
  std::optional<std::int64_t> exit_status;  ///< bash's, when it reported one
  /// A bash command that ran and exited 0, or a file tool that succeeded.
  bool allowed() const { return !is_error && (tool != "bash" || exit_status == 0); }
};

/// The tool calls' outcomes, in order, of the events `seen` (TOOL_CALLED paired with its
/// TOOL_FINISHED).
inline std::vector<ToolOutcome> outcomes_of(const std::vector<boost::json::object>& seen) {
  std::vector<ToolOutcome> outcomes;
  for (const auto& event : seen) {
    const boost::json::object& data = event.at("data").as_object();
    if (event_kind(event) == "TOOL_CALLED") {
      ToolOutcome outcome;
      outcome.tool = event_data(event, "tool");
      if (const auto* input = data.if_contains("input"); input != nullptr && input->is_object())
        outcome.input = input->as_object();
      outcomes.push_back(std::move(outcome));
    } else if (event_kind(event) == "TOOL_FINISHED" && !outcomes.empty()) {
      ToolOutcome& outcome = outcomes.back();
      const auto* failed = data.if_contains("is_error");
      outcome.is_error = failed == nullptr || !failed->is_bool() || failed->as_bool();
      outcome.text = event_data(event, "text");
      if (const auto* status = data.if_contains("exit_status"); status != nullptr && status->is_int64()) {
        outcome.exit_status = status->as_int64();
      }
    }
  }
  return outcomes;
}

/// Asks `desk` `message` with deskctl and returns its tool calls' outcomes in order; a
/// failure is added (and what came back so far returned) when the turn does not finish.
inline std::vector<ToolOutcome> run_turn(const ServeDaemon& daemon, const std::string& desk,
                                         const std::string& message) {
  auto events = daemon.follow(desk);
  if (!events) {
    ADD_FAILURE() << "could not follow " << desk << "'s events";
    return {};
  }
  const DeskctlResult asked = daemon.deskctl({"ask", desk, message});
  std::vector<boost::json::object> seen;
  if (!events->wait_for_event(is_event("TURN_FINISHED"), std::chrono::seconds(30), &seen)) {
    ADD_FAILURE() << desk << "'s turn did not finish\n" << asked.output << asked.error_output;
  }
  return outcomes_of(seen);
}

/// "allowed" or "refused", with what the tool said, for failure messages.
inline std::string describe(const ToolOutcome& outcome) {
  return std::string(outcome.allowed() ? "allowed" : "refused") + " — " + outcome.tool + " " +
         boost::json::serialize(outcome.input) + " answered: " + outcome.text;
}

/// A name no other test process uses.
inline std::string unique_text(const std::string& prefix) {
  static std::mt19937_64 random{std::random_device{}()};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(random());
}

/// Copies the probe at `built` into DESK/tools/, executable by every uid; returns the path.
inline std::string copy_probe_into_desk(const std::string& desk_directory, const std::string& built) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(desk_directory) / "tools";
  fs::create_directories(folder);
  ::chmod(folder.c_str(), 0755);
  const fs::path copy = folder / fs::path(built).filename();
  fs::copy_file(built, copy, fs::copy_options::overwrite_existing);
  ::chmod(copy.c_str(), 0755);
  return copy;
}

}  // namespace deskd::e2e
