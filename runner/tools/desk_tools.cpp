#include "runner/tools/desk_tools.h"

#include "policy/path_policy.h"
#include "runner/tools/bash_session.h"
#include "runner/tools/bash_tools.h"
#include "runner/tools/file_tools.h"
#include "sandbox/file_opener.h"

namespace deskd::tools {

ToolRegistry make_desk_tools(boost::asio::any_io_executor executor, DeskToolSettings settings) {
  ToolRegistry registry;
  // The file tools check the very confinement the sandbox mounts for bash.
  policy::PathPolicy policy(settings.sandbox.confinement);
  // ... and open files inside a sandbox of the desk's own, with its uid, view and rules.
  auto opener = std::make_shared<sandbox::FileOpener>(settings.sandbox);
  auto refusals = settings.sandbox.refusals;
  auto session = std::make_shared<BashSession>(std::move(executor), std::move(settings.sandbox),
                                               settings.timeout_seconds, settings.maximum_output_characters);
  if (settings.idle_terminal.count() > 0) {
    // An idle desk keeps no sandbox: its file opener closes with its terminal.
    session->close_when_idle(settings.idle_terminal,
                             [opener](std::chrono::milliseconds idle) { return opener->close_if_unused_for(idle); });
  }
  add_bash_tools(registry, std::move(session));
  add_file_tools(registry, std::move(policy), std::move(settings.proposals), std::move(settings.desk_name),
                 std::move(opener), std::move(refusals));
  return registry;
}

namespace {

std::string joined(const std::vector<std::filesystem::path>& paths) {
  std::string text;
  for (const auto& path : paths) text += (text.empty() ? "" : ", ") + path.native();
  return text.empty() ? "none" : text;
}

std::string writable_places(const policy::Confinement& confinement) {
  std::string text;
  for (const auto& place : confinement.writable_places()) {
    text += (text.empty() ? "" : ", ") + place.path.native() +
            (place.kind == policy::WritablePlace::Kind::folder ? "/" : "");
  }
  return text;
}

std::string network_reach(sandbox::NetworkMode network) {
  switch (network) {
    case sandbox::NetworkMode::none: return "none (loopback only)";
    case sandbox::NetworkMode::host: return "the host's";
    case sandbox::NetworkMode::allowlist: return "only the allowed hosts, through deskd's proxy (see /status)";
  }
  return "unknown";
}

std::string reach_text(ToolReach reach, const sandbox::SandboxSpec& spec) {
  const policy::Confinement& confinement = spec.confinement;
  switch (reach) {
    case ToolReach::shell:
      return "runs commands in the desk's sandbox: reads " + confinement.desk_directory().native() +
             " and the system folders" + (spec.read_only_paths.empty() ? "" : " and " + joined(spec.read_only_paths)) +
             "; writes only its writable places and its own /tmp; network: " +
             network_reach(spec.network);
    case ToolReach::reads:
      return "reads inside " + confinement.desk_directory().native() +
             " and what the sandbox shows, never a hidden path";
    case ToolReach::writes: return "writes only " + writable_places(confinement);
    case ToolReach::proposes:
      return "proposes a change to a file of the desk it may not write; a person accepts or rejects it";
    case ToolReach::delegates:
      return "starts subagents with these tools (or fewer), each in a sandbox of its own with this same confinement";
    case ToolReach::none: break;
  }
  return "touches nothing of the desk";
}

}  // namespace

std::string describe_tool_reach(const ToolRegistry& registry, const sandbox::SandboxSpec& spec) {
  std::string text = "Tools, and what each may touch:";
  for (const auto& tool : registry.tools())
    text += "\n" + std::string(tool->name()) + ": " + reach_text(tool->reach(), spec);
  text += "\nDesk folder: " + spec.confinement.desk_directory().native();
  text += "\nWritable places: " + writable_places(spec.confinement);
  text += "\nHidden paths (never readable, by any tool): " + joined(spec.confinement.hidden_paths());
  return text;
}

}  // namespace deskd::tools
