#pragma once
// The desk's tools as MCP describes them: tools/list entries (name, title, description,
// inputSchema, outputSchema, annotations with the title again: some hosts read only
// annotations.title), the check of a call's arguments against the declared inputSchema, and
// a ToolResult as a CallToolResult.
//
// A CallToolResult says the same thing twice: the text block is the whole answer a host
// shows the model (the tool's output, or why it failed), and structuredContent repeats that
// text with `is_error` and, for bash, the exit status. Hosts that hand the model the
// structuredContent instead of the text (and drop isError on the way) still tell it the
// call failed.

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "runner/mcp/mcp_protocol.h"
#include "runner/tools/tool.h"

namespace deskd::tools {

class ToolRegistry;

class McpToolCatalog {
 public:
  /// Reads every tool's schemas once; a schema that is not a JSON object is logged and
  /// replaced by the loosest object schema. `tools` must outlive the catalog.
  explicit McpToolCatalog(const ToolRegistry& tools);

  /// The tools/list result's "tools".
  const boost::json::array& listing() const { return listing_; }

  /// The tool a tools/call names; nullptr with a -32602 error ("Unknown tool: x", naming
  /// the tools there are) otherwise.
  Tool* find(std::string_view name, mcp::RpcError& refused) const;

  /// How `arguments` break the inputSchema of the tool `name` (one that find() found), as a
  /// sentence naming the tool and the argument at fault; nullopt when they conform.
  std::optional<std::string> argument_problem(std::string_view name, const boost::json::object& arguments) const;

  /// The CallToolResult for `result`.
  static boost::json::object call_result(ToolResult result);

 private:
  const ToolRegistry& tools_;
  boost::json::array listing_;
  std::map<std::string, boost::json::value, std::less<>> input_schemas_;
};

}  // namespace deskd::tools
