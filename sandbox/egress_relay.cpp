#include "sandbox/egress_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {
namespace {

constexpr const char* kProxyVariables[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"};

}  // namespace

Result<EgressPlan> plan_egress(const SandboxSpec& spec, bool runs_command) {
  EgressPlan plan;
  if (spec.network != NetworkMode::allowlist || !runs_command) return plan;
  if (!spec.egress) {
    return Error::make(ErrorCode::unsupported,
                       "The sandbox could not be set up: network \"allowlist\" needs deskd's egress proxy, which "
                       "this command does not run (deskd serve, run, shell and mcp do).");
  }
  auto relay = spec.egress->open_relay();
  if (!relay.ok()) {
    return Error{
        relay.error().code, relay.error().error_number,
        "The sandbox could not be set up: opening its relay to the egress proxy failed: " + relay.error().what};
  }
  plan.relay = std::move(relay).value();
  for (const auto& name : spec.egress_names) {
    std::uint32_t address = 0;
    std::memcpy(&address, name.address.data(), sizeof address);  // already network order
    for (const auto port : name.ports) {
      plan.listeners.push_back({address, port});
      if (port < 1024 && (plan.unprivileged_port_start < 0 || port < plan.unprivileged_port_start)) {
        plan.unprivileged_port_start = port;
      }
    }
  }
  return plan;
}

// The forwarder holds no capability; the setting is per network namespace, and only `lo`
// is in the sandbox's. Whichever /proc writes it, it is the sandbox's own namespace's.
StepResult let_forwarder_bind_ports(int port) {
  if (port < 0) return step_succeeded();
  constexpr const char* kStep = "let the egress forwarder bind the allowed names' ports";
  constexpr const char* kPath = "/proc/sys/net/ipv4/ip_unprivileged_port_start";
  char text[16];
  std::size_t length = 0;
  char digits[8];
  std::size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + port % 10);
    port /= 10;
  } while (port > 0 && count < sizeof digits);
  while (count > 0) text[length++] = digits[--count];
  text[length++] = '\n';
  const int fd = ::open(kPath, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return step_failed(kStep, kPath);
  const ssize_t written = ::write(fd, text, length);
  const StepResult failed = step_failed(kStep, kPath);  // errno before the close
  ::close(fd);
  return written == static_cast<ssize_t>(length) ? step_succeeded() : failed;
}

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
