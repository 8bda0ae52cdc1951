// The desks' side of [[api]]: a [[desk]]'s 'apis', resolved into its DeskConfig::apis and
// its allowed_hosts (config_api.h).

#include <algorithm>
#include <map>
#include <set>

#include "policy/egress_allowlist.h"
#include "runner/config/config_api.h"

namespace deskd::app::config_detail {
namespace {

std::string api_network_name(sandbox::NetworkMode network) {
  switch (network) {
    case sandbox::NetworkMode::host: return "\"host\"";
    case sandbox::NetworkMode::allowlist: return "\"allowlist\"";
    case sandbox::NetworkMode::none: break;
  }
  return "\"none\"";
}

// Whether `entry` already lets the desk reach `wanted` exactly: a wildcard is not enough, the
// exact name is what gives the origin its own loopback address (policy/egress_names.h).
bool covers(const policy::HostPattern& entry, const policy::HostPattern& wanted) {
  return entry.kind == wanted.kind && entry.name == wanted.name && entry.address == wanted.address &&
         entry.prefix_bits == wanted.prefix_bits && (!entry.port || entry.port == wanted.port);
}

void allow_origin(const policy::ApiOrigin& origin, SandboxConfig& sandbox) {
  const std::string entry = origin.host + ":" + std::to_string(origin.port);
  auto wanted = policy::parse_host_pattern(entry);
  if (!wanted.ok()) return;  // parse_api_origin took only exact names and addresses
  for (const auto& written : sandbox.allowed_hosts) {
    auto pattern = policy::parse_host_pattern(written);
    if (pattern.ok() && covers(*pattern, *wanted)) return;
  }
  sandbox.allowed_hosts.push_back(entry);
}

std::string api_list(std::span<const ApiDraft> apis) {
  if (apis.empty()) return "the config has no [[api]]";
  std::string names;
  for (const auto& api : apis) names += (names.empty() ? "" : ", ") + api.spec.name;
  return "the APIs are " + names;
}

}  // namespace

void read_desk_apis(TableReader& reader, DeskDraft& draft) {
  const toml::node* node = reader.find("apis");
  if (node == nullptr) return;
  draft.apis_position = reader.where(*node);
  auto names = reader.strings("apis");
  if (!names) return;
  for (auto& [name, element] : *names) draft.api_names.emplace_back(std::move(name), reader.where(*element));
}

void give_desks_their_apis(std::span<DeskDraft> drafts, std::span<const ApiDraft> apis, ProblemList& problems) {
  for (DeskDraft& draft : drafts) {
    if (draft.api_names.empty()) continue;
    DeskConfig& desk = draft.desk;
    const std::string desk_name = "desk " + in_quotes(desk.name);
    if (desk.sandbox.network != sandbox::NetworkMode::allowlist) {
      problems.add(draft.apis_position, desk_name + " names APIs in 'apis', which it reaches only through deskd's " +
                                            "egress proxy; write network = \"allowlist\" in its [desk.sandbox] (its " +
                                            "network is " + api_network_name(desk.sandbox.network) + ")");
    }
    std::set<std::string> named;
    std::map<std::string, std::string> origin_owners;    // origin text → API name
    std::map<std::string, std::string> variable_owners;  // variable → API name
    for (const auto& [name, position] : draft.api_names) {
      const auto api =
          std::find_if(apis.begin(), apis.end(), [&](const ApiDraft& one) { return one.spec.name == name; });
      if (api == apis.end()) {
        problems.add(position, "'apis' names " + in_quotes(name) + ", but no [[api]] of this config is called that; " +
                                   api_list(apis));
        continue;
      }
      if (!named.insert(name).second) continue;
      for (const auto& origin : api->spec.origins) {
        const auto [owner, fresh] = origin_owners.emplace(origin.text(), name);
        if (!fresh) {
          problems.add(position, desk_name + " names APIs " + in_quotes(owner->second) + " and " + in_quotes(name) +
                                     ", which both cover " + origin.text() +
                                     "; the gate could not tell whose rules and keys a request there takes");
        }
      }
      for (const auto& [variable, variable_position] : api->variables) {
        const auto [owner, fresh] = variable_owners.emplace(variable, name);
        if (!fresh && owner->second != name) {
          problems.add(variable_position, "the variable " + in_quotes(variable) + " holds a placeholder of API " +
                                              in_quotes(owner->second) + " and of API " + in_quotes(name) +
                                              ", both named by " + desk_name +
                                              "; each credential of a desk needs a variable of its own");
        }
        if (std::find(desk.sandbox.environment_variables.begin(), desk.sandbox.environment_variables.end(), variable) !=
            desk.sandbox.environment_variables.end()) {
          problems.add(draft.apis_position, desk_name + " passes " + in_quotes(variable) +
                                                " into its sandbox ('environment'), the variable that holds API " +
                                                in_quotes(name) + "'s placeholder; remove it from 'environment'");
        }
      }
      if (desk.sandbox.network == sandbox::NetworkMode::allowlist) {
        for (const auto& origin : api->spec.origins) allow_origin(origin, desk.sandbox);
      }
      desk.apis.push_back(api->spec);
    }
  }
}

}  // namespace deskd::app::config_detail
