#pragma once
// The desk's tools as MCP describes them: tools/list entries (name, title, description,
// inputSchema, outputSchema, annotations), the check of a call's arguments against the
// declared inputSchema, and a ToolResult as a CallToolResult (text content for every client,
// structuredContent matching the outputSchema for those that read it).

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

  /// The tool a tools/call names, its arguments checked against its inputSchema; a
  /// -32602 error ("Unknown tool: x", or the argument at fault) otherwise.
  Tool* find_for_call(std::string_view name, const boost::json::object& arguments, mcp::RpcError& refused) const;

  /// The CallToolResult for `result`.
  static boost::json::object call_result(ToolResult result);

 private:
  const ToolRegistry& tools_;
  boost::json::array listing_;
  std::map<std::string, boost::json::value, std::less<>> input_schemas_;
};

}  // namespace deskd::tools
