#include "runner/mcp/mcp_protocol.h"

#include <boost/json/serialize.hpp>

#include "base/utf8_text.h"

namespace deskd::tools::mcp {
namespace {

namespace json = boost::json;

json::object server_info(const McpServerInfo& info) { return {{"name", info.name}, {"version", info.version}}; }

json::object capabilities() { return {{"tools", json::object{{"listChanged", false}}}}; }

// The revisions in words, for messages.
std::string versions_in_words() {
  return "deskd speaks 2025-06-18 and 2025-11-25 after initialize, and 2026-07-28 on every request that names it in "
         "_meta[\"" +
         std::string(kProtocolVersionMetaKey) + "\"]";
}

json::object cacheable(json::object result) {
  result["ttlMs"] = kCacheMilliseconds;
  // Private: the tools describe this desk, which another person's desk need not share.
  result["cacheScope"] = "private";
  return result;
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
    json::object data{{"supported", supported_versions()}};
    if (requested != nullptr) data["requested"] = *requested;
    refused = RpcError{kInvalidParams,
                       "Unsupported protocol version: initialize needs a 'protocolVersion' such as \"" +
                           std::string(std::end(kLegacyProtocolVersions)[-1]) + "\"; " + versions_in_words() + ".",
                       std::move(data)};
    return std::nullopt;
  }
  // initialize is the legacy handshake: a client that asks it for a modern revision gets the
  // newest legacy one (the modern era has no initialize at all).
  std::string chosen = std::end(kLegacyProtocolVersions)[-1];
  bool spoken = false;
  for (const char* version : kLegacyProtocolVersions) {
    if (requested->as_string() == version) {
      chosen = version;
      spoken = true;
    }
  }
  json::object result{{"protocolVersion", chosen}, {"capabilities", capabilities()}, {"serverInfo", server_info(info)}};
  return Initialized{std::move(result), std::move(chosen), spoken};
}

json::array supported_versions() {
  json::array listed;
  for (const char* version : kModernProtocolVersions) listed.emplace_back(version);
  for (auto each = std::rbegin(kLegacyProtocolVersions); each != std::rend(kLegacyProtocolVersions); ++each) {
    listed.emplace_back(*each);
  }
  return listed;
}

json::object discover(const McpServerInfo& info) {
  // serverInfo is in _meta (2026-07-28); its drafts had it at the top level, where a client
  // of a draft still looks, and the schema lets a result carry more.
  return modern_result(cacheable(json::object{{"supportedVersions", supported_versions()},
                                              {"capabilities", capabilities()},
                                              {"serverInfo", server_info(info)}}),
                       info);
}

json::object modern_result(json::object result, const McpServerInfo& info) {
  result["resultType"] = "complete";
  json::value& meta = result["_meta"];
  if (!meta.is_object()) meta = json::object{};
  meta.as_object()["io.modelcontextprotocol/serverInfo"] = server_info(info);
  return result;
}

std::optional<RequestRevision> request_revision(const json::object& params, RpcError& refused) {
  const json::value* meta = params.if_contains("_meta");
  const json::value* version =
      meta != nullptr && meta->is_object() ? meta->as_object().if_contains(kProtocolVersionMetaKey) : nullptr;
  if (version == nullptr) return RequestRevision{};
  if (!version->is_string()) {
    refused = {kInvalidParams,
               "Invalid params: _meta[\"" + std::string(kProtocolVersionMetaKey) + "\"] must be a string.",
               std::nullopt};
    return std::nullopt;
  }
  const std::string_view asked = version->as_string();
  for (const char* spoken : kModernProtocolVersions) {
    if (asked == spoken) return RequestRevision{std::string(spoken)};
  }
  // A legacy revision in _meta: some legacy clients send it; their session decides.
  if (is_revision_date(asked) && asked < kFirstModernVersion) return RequestRevision{};
  refused = {kUnsupportedProtocolVersion,
             "Unsupported protocol version: " + shown(asked, 20) + "; " + versions_in_words() + ".",
             json::object{{"supported", supported_versions()}, {"requested", shown(asked, 200)}}};
  return std::nullopt;
}

}  // namespace deskd::tools::mcp
