#include "sandbox/egress_relay.h"

#include <algorithm>
#include <cctype>

namespace deskd::sandbox {
namespace {

constexpr const char* kProxyVariables[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"};

}  // namespace

std::vector<std::string> egress_proxy_environment() {
  const std::string proxy = "http://127.0.0.1:" + std::to_string(kEgressProxyPort);
  std::vector<std::string> environment;
  for (const char* name : kProxyVariables) {
    const std::string value = std::string(name) == "NO_PROXY" ? "localhost,127.0.0.1,::1" : proxy;
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    // curl reads only the lower-case http_proxy (the upper-case one can be set by a CGI
    // request's Proxy: header); other tools read the upper-case forms: set both.
    environment.push_back(std::string(name) + "=" + value);
    environment.push_back(lower + "=" + value);
  }
  return environment;
}

bool is_proxy_variable(const std::string& entry) {
  const std::size_t equals = entry.find('=');
  std::string name = entry.substr(0, equals);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  return std::any_of(std::begin(kProxyVariables), std::end(kProxyVariables),
                     [&](const char* proxy) { return name == proxy; });
}

}  // namespace deskd::sandbox
