#pragma once
// A desk's whole tool set, built from its sandbox: the bash tools over one BashSession in the
// sandbox, and the file tools held by a PathPolicy over the same confinement, so both see
// the same world at the same paths.

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "runner/tools/tool_registry.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::tools {

class ProposalStore;

struct DeskToolSettings {
  sandbox::SandboxSpec sandbox;                   ///< Where bash runs; its confinement holds the file tools.
  double timeout_seconds = 120;                   ///< How long one bash command may run.
  std::size_t maximum_output_characters = 20000;  ///< How much of a command's output is kept.
  std::string desk_name;                          ///< Recorded in each proposal.
  std::shared_ptr<ProposalStore> proposals;       ///< Null: propose_file_change refuses.
  /// The terminal and the file opener close once unused this long (BashSession::
  /// close_when_idle); zero: never. The config's default is DeskConfig::idle_terminal.
  std::chrono::milliseconds idle_terminal{0};
};

/// The desk's tools, in the order a model sees them: bash, bash_background,
/// check_background, bash_restart, then the file tools. Starts nothing: the terminal starts
/// when a turn begins (ToolRegistry::prepare) or with the first command, and again after
/// each restart. Closing the registry closes the bash session.
ToolRegistry make_desk_tools(boost::asio::any_io_executor executor, DeskToolSettings settings);

/// The text of /tools: each tool of `registry` and what it may touch, in the words of the
/// desk's confinement and sandbox (`spec`): its folder, its writable places, its hidden
/// paths, the read-only places it is shown and its network.
std::string describe_tool_reach(const ToolRegistry& registry, const sandbox::SandboxSpec& spec);

}  // namespace deskd::tools
