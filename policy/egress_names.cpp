#include "policy/egress_names.h"

#include <algorithm>
#include <optional>
#include <sstream>

namespace deskd::policy {
namespace {

// Lines of the host's /etc/hosts kept: loopback addresses naming localhost (or ip6-*), at
// most this many, so that a host file with thousands of blocking entries adds nothing.
constexpr std::size_t kMaximumKeptLines = 16;

std::array<std::uint8_t, 4> address_of(std::size_t index) {
  const std::size_t number = index + 1;  // 127.100.0.1 first; never .0.0
  return {127, 100, static_cast<std::uint8_t>(number >> 8), static_cast<std::uint8_t>(number & 0xff)};
}

// The line kept of a host's /etc/hosts line: a loopback address with only its localhost and
// ip6- names (never an allowed name: a host line that also named one would win over the
// name's own address, and the tool would reach the sandbox's own loopback instead); nullopt
// for any other line.
std::optional<std::string> kept_line(const std::string& line, const std::vector<EgressName>& names) {
  std::istringstream words(line);
  std::string address;
  if (!(words >> address) || address.front() == '#') return std::nullopt;
  const auto parsed = NetworkAddress::parse(address);
  if (!parsed || refused_address_class(*parsed) != std::optional<std::string>("loopback")) return std::nullopt;
  // Never a line of ours (or one that would take a name's address).
  if (parsed->is_v4 && parsed->within(NetworkAddress::v4({127, 100, 0, 0}), 16)) return std::nullopt;
  std::string kept = address;
  bool named = false;
  bool dropped = false;
  for (std::string name; words >> name;) {
    if (name.front() == '#') break;
    const bool allowed_name =
        std::any_of(names.begin(), names.end(), [&](const EgressName& each) { return each.name == name; });
    if ((!name.starts_with("localhost") && !name.starts_with("ip6-")) || allowed_name) {
      dropped = true;
      continue;
    }
    kept += "\t" + name;
    named = true;
  }
  if (!named) return std::nullopt;
  return dropped ? kept : line;  // as the host wrote it, unless a name had to go
}

}  // namespace

std::vector<EgressName> egress_names(const EgressAllowlist& allowlist) {
  std::vector<EgressName> names;
  std::size_t listeners = 0;
  for (const auto& pattern : allowlist.patterns()) {
    if (pattern.kind != HostPattern::Kind::exact_name) continue;
    std::vector<std::uint16_t> ports;
    if (pattern.port) ports.push_back(*pattern.port);
    else ports = {80, 443};
    auto found = std::find_if(names.begin(), names.end(), [&](const EgressName& each) { return each.name == pattern.name; });
    std::size_t added = 0;
    if (found == names.end()) {
      EgressName fresh{pattern.name, address_of(names.size()), {}};
      for (auto port : ports) {
        if (listeners + added < kMaximumEgressListeners) fresh.ports.push_back(port), ++added;
      }
      if (fresh.ports.empty()) continue;
      names.push_back(std::move(fresh));
    } else {
      for (auto port : ports) {
        if (std::find(found->ports.begin(), found->ports.end(), port) != found->ports.end()) continue;
        if (listeners + added < kMaximumEgressListeners) found->ports.push_back(port), ++added;
      }
    }
    listeners += added;
  }
  for (auto& name : names) std::sort(name.ports.begin(), name.ports.end());
  return names;
}

const EgressName* egress_name_at(const std::vector<EgressName>& names, const NetworkAddress& address,
                                 std::uint16_t port) {
  const auto v4 = address.embedded_v4();
  if (!v4) return nullptr;
  for (const auto& name : names) {
    if (!std::equal(name.address.begin(), name.address.end(), v4->bytes.begin())) continue;
    if (std::find(name.ports.begin(), name.ports.end(), port) == name.ports.end()) return nullptr;
    return &name;
  }
  return nullptr;
}

std::string egress_hosts_file(std::string_view host_file, const std::vector<EgressName>& names) {
  std::string text =
      "# Written by deskd for a desk with network = \"allowlist\": each name below reaches its\n"
      "# host through deskd's egress proxy. Other allowed names need the proxy variables.\n";
  std::size_t kept = 0;
  std::istringstream lines{std::string(host_file)};
  for (std::string line; kept < kMaximumKeptLines && std::getline(lines, line);) {
    if (auto line_kept = kept_line(line, names)) text += *line_kept + "\n", ++kept;
  }
  if (kept == 0) text += "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
  for (const auto& name : names) {
    text += std::to_string(name.address[0]) + "." + std::to_string(name.address[1]) + "." +
            std::to_string(name.address[2]) + "." + std::to_string(name.address[3]) + "\t" + name.name + "\n";
  }
  return text;
}

}  // namespace deskd::policy
