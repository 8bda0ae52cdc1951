#include "policy/egress_allowlist.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace deskd::policy {
namespace {

Error bad(std::string_view text, const std::string& why) {
  return Error::make(ErrorCode::invalid_argument, "'" + std::string(text) + "' is not a host pattern: " + why);
}

std::optional<std::uint16_t> parse_port(std::string_view digits) {
  unsigned value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

bool port_matches(const HostPattern& pattern, std::uint16_t port) { return !pattern.port || *pattern.port == port; }

}  // namespace

std::optional<std::string> normalized_host_name(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty() || name.size() > 253) return std::nullopt;
  std::string lower;
  lower.reserve(name.size());
  std::size_t label_length = 0;
  for (const char c : name) {
    if (c == '.') {
      if (label_length == 0) return std::nullopt;
      label_length = 0;
    } else if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_') {
      if (++label_length > 63) return std::nullopt;
    } else {
      return std::nullopt;
    }
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (label_length == 0) return std::nullopt;
  return lower;
}

Result<HostPattern> parse_host_pattern(std::string_view text) {
  if (text.empty()) return bad(text, "it is empty");
  if (text.find("://") != std::string_view::npos) return bad(text, "write the host name, not a URL");
  HostPattern pattern;
  std::string_view host = text;
  // "[v6]" or "[v6]:port"; a bare v6 address has colons of its own and takes no port.
  if (host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) return bad(text, "'[' without ']'");
    const std::string_view after = host.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad(text, "only ':PORT' may follow ']'");
      pattern.port = parse_port(after.substr(1));
      if (!pattern.port) return bad(text, "the port must be a number from 1 to 65535");
    }
    host = host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    const std::size_t colon = host.find(':');
    pattern.port = parse_port(host.substr(colon + 1));
    if (!pattern.port) return bad(text, "the port must be a number from 1 to 65535");
    host = host.substr(0, colon);
  }
  // An address, or a subnet "ADDRESS/BITS".
  std::string_view address_text = host;
  std::optional<unsigned> prefix;
  if (const std::size_t slash = host.find('/'); slash != std::string_view::npos) {
    unsigned bits = 0;
    const std::string_view digits = host.substr(slash + 1);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
      return bad(text, "the prefix length after '/' must be a number");
    }
    prefix = bits;
    address_text = host.substr(0, slash);
  }
  if (auto address = NetworkAddress::parse(address_text)) {
    const unsigned width = address->is_v4 ? 32 : 128;
    if (prefix && *prefix > width) return bad(text, "the prefix length is longer than the address");
    pattern.kind = HostPattern::Kind::address;
    pattern.address = *address;
    pattern.prefix_bits = prefix.value_or(width);
    return pattern;
  }
  if (prefix) return bad(text, "only an IP address takes a '/' prefix length");
  if (host.starts_with("*.")) {
    auto suffix = normalized_host_name(host.substr(2));
    if (!suffix) return bad(text, "what follows '*.' is not a host name");
    // "*.com" would open a whole top-level domain: a wildcard needs a registrable-looking
    // name under it (at least two labels).
    if (suffix->find('.') == std::string::npos) return bad(text, "a wildcard needs at least two labels after '*.'");
    pattern.kind = HostPattern::Kind::wildcard_name;
    pattern.name = std::move(*suffix);
    return pattern;
  }
  if (host.find('*') != std::string_view::npos) return bad(text, "'*' is allowed only as a leading '*.'");
  auto name = normalized_host_name(host);
  if (!name) return bad(text, "it is not a host name, an IP address or a subnet");
  pattern.kind = HostPattern::Kind::exact_name;
  pattern.name = std::move(*name);
  return pattern;
}

Result<EgressAllowlist> EgressAllowlist::parse(const std::vector<std::string>& entries) {
  EgressAllowlist allowlist;
  for (const auto& entry : entries) {
    DESKD_ASSIGN_OR_RETURN(auto pattern, parse_host_pattern(entry));
    allowlist.patterns_.push_back(std::move(pattern));
    allowlist.entries_.push_back(entry);
  }
  return allowlist;
}

bool EgressAllowlist::allows_host(std::string_view host, std::uint16_t port) const {
  std::string_view bare = host;
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  if (auto address = NetworkAddress::parse(bare)) return names_address(*address, port);
  auto name = normalized_host_name(host);
  if (!name) return false;
  return std::any_of(patterns_.begin(), patterns_.end(), [&](const HostPattern& pattern) {
    if (!port_matches(pattern, port)) return false;
    if (pattern.kind == HostPattern::Kind::exact_name) return *name == pattern.name;
    if (pattern.kind == HostPattern::Kind::wildcard_name) {
      return name->size() > pattern.name.size() + 1 && name->ends_with(pattern.name) &&
             (*name)[name->size() - pattern.name.size() - 1] == '.';
    }
    return false;
  });
}

bool EgressAllowlist::names_address(const NetworkAddress& address, std::uint16_t port) const {
  // ::ffff:10.0.0.1 is named by an entry for 10.0.0.1, and nothing else.
  const NetworkAddress judged = address.embedded_v4().value_or(address);
  return std::any_of(patterns_.begin(), patterns_.end(), [&](const HostPattern& pattern) {
    return pattern.kind == HostPattern::Kind::address && port_matches(pattern, port) &&
           judged.within(pattern.address, pattern.prefix_bits);
  });
}

std::optional<std::string> refused_destination(const EgressAllowlist& allowlist, const NetworkAddress& address,
                                               std::uint16_t port) {
  auto why = refused_address_class(address);
  if (!why || allowlist.names_address(address, port)) return std::nullopt;
  return why;
}

}  // namespace deskd::policy
