// An API's origins and its rules' path patterns (policy/api_rules.h).
//
// Paths are matched segment by segment after percent-decoding each segment, so that
// "/%61dmin" meets a rule written for "/admin" exactly as the server will read it. A path
// whose decoding could change its shape on the server — a "." or ".." segment (also encoded:
// "%2e%2e"), an empty segment ("//"), an encoded '/' or '\' (%2F, %5C), a raw '\', a NUL or
// another control byte, a malformed %-escape, a "..;" segment (which servlet containers read
// as "..") — matches no pattern at all, not even "/**", so
// such a request meets no rule and is denied.

#include <algorithm>
#include <charconv>

#include "base/ascii_text.h"
#include "policy/api_rules.h"
#include "policy/egress_allowlist.h"
#include "policy/network_address.h"

namespace deskd::policy {
namespace {

Error bad_origin(std::string_view text, const std::string& why) {
  return Error::make(ErrorCode::invalid_argument, "'" + std::string(text) + "' is not an API origin: " + why);
}

std::uint16_t default_port(std::string_view scheme) { return scheme == "https" ? 443 : 80; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One segment percent-decoded; nullopt when the segment could change the path's shape on
// the server (see the comment at the top) or is malformed.
std::optional<std::string> decoded_segment(std::string_view segment) {
  std::string decoded;
  decoded.reserve(segment.size());
  for (std::size_t index = 0; index < segment.size(); ++index) {
    char c = segment[index];
    if (c == '%') {
      if (index + 2 >= segment.size()) return std::nullopt;
      const int high = hex_digit(segment[index + 1]);
      const int low = hex_digit(segment[index + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      c = static_cast<char>(high * 16 + low);
      index += 2;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\' || byte < 0x20 || byte == 0x7f) return std::nullopt;
    decoded.push_back(c);
  }
  // Servlet containers drop a segment's ";parameters" before resolving dots: "..;" is "..".
  const std::string_view before_parameters = std::string_view(decoded).substr(0, decoded.find(';'));
  if (before_parameters == "." || before_parameters == "..") return std::nullopt;
  return decoded;
}

// The segments of a path or pattern after its leading '/': "/" has none, "/a/" has "a" and
// a last empty one (a trailing slash). nullopt when any segment is refused, or a segment
// but the last is empty.
std::optional<std::vector<std::string>> decoded_segments(std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  std::vector<std::string> segments;
  if (path.size() == 1) return segments;
  std::string_view rest = path.substr(1);
  for (;;) {
    const std::size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    const bool last = slash == std::string_view::npos;
    if (segment.empty() && !last) return std::nullopt;
    auto decoded = decoded_segment(segment);
    if (!decoded) return std::nullopt;
    segments.push_back(std::move(*decoded));
    if (last) return segments;
    rest = rest.substr(slash + 1);
  }
}

// Whether pattern segments [0, p) can match path segments [0, s), by dynamic programming:
// several "**" never take more than patterns × segments steps.
bool segments_match(const std::vector<std::string>& pattern, const std::vector<std::string>& path) {
  const std::size_t columns = path.size() + 1;
  std::vector<char> matches((pattern.size() + 1) * columns, 0);
  const auto at = [&](std::size_t p, std::size_t s) -> char& { return matches[p * columns + s]; };
  at(0, 0) = 1;
  for (std::size_t p = 1; p <= pattern.size(); ++p) {
    const std::string& segment = pattern[p - 1];
    for (std::size_t s = 0; s <= path.size(); ++s) {
      if (segment == "**") {
        at(p, s) = at(p - 1, s) || (s > 0 && at(p, s - 1));
      } else if (s > 0) {
        const bool one = segment == "*" ? !path[s - 1].empty() : segment == path[s - 1];
        at(p, s) = one && at(p - 1, s - 1);
      }
    }
  }
  return at(pattern.size(), path.size()) != 0;
}

}  // namespace

std::string ApiOrigin::text() const {
  std::string written = scheme + "://" + host;
  if (port != default_port(scheme)) written += ":" + std::to_string(port);
  return written;
}

Result<ApiOrigin> parse_api_origin(std::string_view text) {
  ApiOrigin origin;
  std::string_view rest;
  const std::string lowered = lowercase(text.substr(0, std::min<std::size_t>(text.size(), 8)));
  if (lowered.starts_with("https://")) {
    origin.scheme = "https";
    rest = text.substr(8);
  } else if (lowered.starts_with("http://")) {
    origin.scheme = "http";
    rest = text.substr(7);
  } else {
    return bad_origin(text, "it must start with https:// or http://");
  }
  // A lone "/" is the root path every origin has; anything more is a path of its own.
  if (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.find_first_of("/?#") != std::string_view::npos) {
    return bad_origin(text, "an origin has no path, query or fragment; write the path in a rule");
  }
  if (rest.find('@') != std::string_view::npos) {
    return bad_origin(text, "an origin has no user; the credential is given by [[api.credential]]");
  }
  if (rest.starts_with('[')) {
    return bad_origin(text, "an IPv6 address is not supported as an API's host; name the host, or use 'addresses'");
  }
  std::string_view host = rest;
  origin.port = default_port(origin.scheme);
  if (const std::size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    const std::string_view digits = rest.substr(colon + 1);
    unsigned port = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || port == 0 || port > 65535) {
      return bad_origin(text, "the port must be a number from 1 to 65535");
    }
    origin.port = static_cast<std::uint16_t>(port);
  }
  if (host.empty()) return bad_origin(text, "it names no host");
  if (host.find('*') != std::string_view::npos) {
    return bad_origin(text, "a wildcard host is not an origin; name each host the API is served from");
  }
  if (auto address = NetworkAddress::parse(host); address && address->is_v4) {
    origin.host = address->text();
    return origin;
  }
  auto name = normalized_host_name(host);
  if (!name) return bad_origin(text, "'" + std::string(host) + "' is not a host name");
  origin.host = std::move(*name);
  return origin;
}

std::string_view api_action_name(ApiAction action) {
  switch (action) {
    case ApiAction::allow: return "allow";
    case ApiAction::ask: return "ask";
    case ApiAction::deny: break;
  }
  return "deny";
}

Result<void> check_api_path_pattern(std::string_view pattern) {
  const auto bad = [&](const std::string& why) {
    return Error::make(ErrorCode::invalid_argument, "the path pattern '" + std::string(pattern) + "' " + why);
  };
  if (pattern.empty() || pattern.front() != '/') return bad("must start with '/'");
  if (pattern.find_first_of("?#") != std::string_view::npos) return bad("must not hold a query or fragment ('?', '#')");
  if (std::any_of(pattern.begin(), pattern.end(), [](char c) { return c == ' ' || c == '\\'; })) {
    return bad("must not hold a space or '\\'");
  }
  auto segments = decoded_segments(pattern);
  if (!segments) {
    return bad(
        "has an empty, '.' or '..' segment, an encoded '/' or '\\', a control character or a malformed "
        "%-escape; requests with such paths are refused anyway");
  }
  for (const auto& segment : *segments) {
    if (segment.find('*') != std::string::npos && segment != "*" && segment != "**") {
      return bad("has '" + segment + "': '*' and '**' must be whole segments");
    }
  }
  return success();
}

bool api_path_matches(std::string_view pattern, std::string_view path) {
  const auto pattern_segments = decoded_segments(pattern);
  const auto path_segments = decoded_segments(path);
  if (!pattern_segments || !path_segments) return false;
  return segments_match(*pattern_segments, *path_segments);
}

}  // namespace deskd::policy
