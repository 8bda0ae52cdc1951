#include "runner/mcp/mcp_protocol.h"

#include <boost/json/serialize.hpp>

#include "base/utf8_text.h"

namespace deskd::tools::mcp {
namespace {

namespace json = boost::json;

json::object server_info(const McpServerInfo& info) { return {{"name", info.name}, {"version", info.version}}; }

json::object capabilities() { return {{"tools", json::object{{"listChanged", false}}}}; }

json::array versions() {
  json::array listed;
  for (const char* version : kProtocolVersions) listed.emplace_back(version);
  return listed;
}

// A revision is named by its date, YYYY-MM-DD.
bool is_revision_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  for (std::size_t index = 0; index < text.size(); ++index) {
    if (index != 4 && index != 7 && (text[index] < '0' || text[index] > '9')) return false;
  }
  return true;
}

}  // namespace

std::string result_reply(const std::string& raw_id, const json::object& result) {
  return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"result":)" + json::serialize(result) + "}";
}

std::string error_reply(const std::optional<std::string>& raw_id, const RpcError& error) {
  json::object body{{"code", error.code}, {"message", error.message}};
  if (error.data) body["data"] = *error.data;
  std::string reply = R"({"jsonrpc":"2.0",)";
  if (raw_id) reply += R"("id":)" + *raw_id + ",";
  return reply + R"("error":)" + json::serialize(body) + "}";
}

std::string notification(std::string_view method, const json::object& params) {
  return json::serialize(json::object{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
}

std::string shown(std::string_view text, std::size_t maximum_bytes) {
  const std::string_view prefix = utf8_prefix(text, maximum_bytes);
  return std::string(prefix) + (prefix.size() < text.size() ? "..." : "");
}

std::optional<Initialized> initialize(const json::object& params, const McpServerInfo& info, RpcError& refused) {
  const json::value* requested = params.if_contains("protocolVersion");
  if (requested == nullptr || !requested->is_string() || !is_revision_date(requested->as_string())) {
    json::object data{{"supported", versions()}};
    if (requested != nullptr) data["requested"] = *requested;
    refused = RpcError{kInvalidParams,
                       "Unsupported protocol version: initialize needs a 'protocolVersion' such as \"" +
                           std::string(std::end(kProtocolVersions)[-1]) + "\"; deskd speaks 2025-06-18 and 2025-11-25.",
                       std::move(data)};
    return std::nullopt;
  }
  std::string chosen = std::end(kProtocolVersions)[-1];
  bool spoken = false;
  for (const char* version : kProtocolVersions) {
    if (requested->as_string() == version) {
      chosen = version;
      spoken = true;
    }
  }
  json::object result{{"protocolVersion", chosen}, {"capabilities", capabilities()}, {"serverInfo", server_info(info)}};
  return Initialized{std::move(result), std::move(chosen), spoken};
}

json::object discover(const McpServerInfo& info) {
  // The 2026-07-28 schema carries serverInfo in _meta; its drafts had it at the top level.
  return json::object{{"resultType", "complete"},
                      {"supportedVersions", versions()},
                      {"capabilities", capabilities()},
                      {"serverInfo", server_info(info)},
                      {"_meta", json::object{{"io.modelcontextprotocol/serverInfo", server_info(info)}}}};
}

}  // namespace deskd::tools::mcp
