#include "runner/mcp/mcp_tool_catalog.h"

#include <boost/json/parse.hpp>

#include <cstdio>

#include "runner/tools/json_schema_check.h"
#include "runner/tools/json_text.h"
#include "runner/tools/tool_registry.h"

namespace deskd::tools {
namespace {

namespace json = boost::json;

json::value object_schema(const Tool& tool, std::string_view text, const char* which) {
  std::error_code error;
  json::value schema = json::parse(text, error);
  if (error || !schema.is_object()) {
    std::fprintf(stderr, "deskd mcp: the %s schema of %.*s is not a JSON object\n", which,
                 static_cast<int>(tool.name().size()), tool.name().data());
    return json::object{{"type", "object"}};
  }
  return schema;
}

json::object annotations(const Tool& tool) {
  const ToolEffects effects = tool.effects();
  // The title again: Claude Code reads only annotations.title (the spec's display order is
  // title, then annotations.title, then name).
  return json::object{{"title", tool.title()},
                      {"readOnlyHint", effects.read_only},
                      {"destructiveHint", effects.destructive},
                      {"idempotentHint", effects.idempotent},
                      {"openWorldHint", effects.open_world}};
}

}  // namespace

McpToolCatalog::McpToolCatalog(const ToolRegistry& tools) : tools_(tools) {
  for (const auto& tool : tools.tools()) {
    json::value input = object_schema(*tool, tool->input_schema(), "input");
    input_schemas_.emplace(std::string(tool->name()), input);
    listing_.emplace_back(json::object{{"name", tool->name()},
                                       {"title", tool->title()},
                                       {"description", tool->description()},
                                       {"inputSchema", std::move(input)},
                                       {"outputSchema", object_schema(*tool, tool->output_schema(), "output")},
                                       {"annotations", annotations(*tool)}});
  }
}

Tool* McpToolCatalog::find(std::string_view name, mcp::RpcError& refused) const {
  Tool* tool = tools_.find(name);
  if (tool == nullptr || !input_schemas_.contains(name)) {
    // The spec's own example words it so; the known names help a person fix the call.
    std::string known;
    for (const auto& each : tools_.tools()) known += (known.empty() ? "" : ", ") + std::string(each->name());
    refused = {mcp::kInvalidParams, "Unknown tool: " + mcp::shown(name) + ". The tools are: " + known + ".",
               std::nullopt};
    return nullptr;
  }
  return tool;
}

std::optional<std::string> McpToolCatalog::argument_problem(std::string_view name,
                                                            const json::object& arguments) const {
  const auto schema = input_schemas_.find(name);
  if (schema == input_schemas_.end()) return "There is no tool " + mcp::shown(name) + ".";
  if (auto problem = schema_violation(schema->second, arguments)) {
    return "Invalid arguments for tool " + std::string(name) + ": " + *problem;
  }
  return std::nullopt;
}

json::object McpToolCatalog::call_result(ToolResult result) {
  std::string text = valid_utf8(std::move(result.text));
  json::object structured{{"text", text}, {"truncated", result.truncated}, {"is_error", result.is_error}};
  if (result.exit_status) structured["exit_status"] = *result.exit_status;
  json::array content{json::object{{"type", "text"}, {"text", std::move(text)}}};
  return json::object{
      {"content", std::move(content)}, {"structuredContent", std::move(structured)}, {"isError", result.is_error}};
}

}  // namespace deskd::tools
