// An 'allowed_hosts' list limits a desk only under network = "allowlist"; under "host" the
// desk reaches every host and under "none" no host, whatever the list says. A list that no
// desk uses is refused, so that nobody believes a desk limited that is not.

#include "runner/config/config_world.h"

namespace deskd::app::config_detail {
namespace {

std::string network_name(sandbox::NetworkMode network) {
  switch (network) {
    case sandbox::NetworkMode::host: return "\"host\" (it reaches every host)";
    case sandbox::NetworkMode::allowlist: return "\"allowlist\"";
    case sandbox::NetworkMode::none: break;
  }
  return "\"none\" (it reaches no host)";
}

}  // namespace

void check_allowed_hosts(std::span<const DeskDraft> drafts, const std::optional<ConfigPosition>& global_position,
                         ProblemList& problems) {
  bool global_list_used = false;
  for (const auto& draft : drafts) {
    const DeskConfig& desk = draft.desk;
    if (!draft.allowed_hosts_position) continue;
    const bool own_list = draft.allowed_hosts_position != global_position;
    const bool allowlist = desk.sandbox.network == sandbox::NetworkMode::allowlist;
    if (!own_list) {
      global_list_used = global_list_used || allowlist;
      continue;
    }
    // An empty list under "none" says what the network already does; it may clear [sandbox]'s.
    const bool says_nothing_more = desk.sandbox.allowed_hosts.empty() && desk.sandbox.network == sandbox::NetworkMode::none;
    if (allowlist || says_nothing_more) continue;
    problems.add(*draft.allowed_hosts_position,
                 "'allowed_hosts' limits a desk only under network = \"allowlist\", and desk " + in_quotes(desk.name) +
                     " has network = " + network_name(desk.sandbox.network) +
                     ", so the list would be ignored; write network = \"allowlist\" in its [desk.sandbox] to limit it "
                     "to these hosts, or remove 'allowed_hosts'");
  }
  if (!global_position || global_list_used || drafts.empty()) return;
  problems.add(*global_position,
               "'allowed_hosts' in [sandbox] limits no desk: every desk has a list of its own or a network other than "
               "\"allowlist\", so the list would be ignored; write network = \"allowlist\" in [sandbox] (or in the "
               "[desk.sandbox] of each desk it should limit), or remove 'allowed_hosts'");
}

}  // namespace deskd::app::config_detail
