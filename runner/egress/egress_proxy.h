#pragma once
// The egress proxy of one desk with network = "allowlist": deskd's end of the relay its
// sandbox's forwarder hands connections over (sandbox/egress_relay.h). A connection made to
// an exact allowed name's own loopback address (policy/egress_names.h: the sandbox's
// /etc/hosts) is a tunnel to that name on the port connected to; on the proxy port it
// reads one HTTP proxy request (CONNECT, or a plain http:// request). Either way it
//   - refuses a host that allowed_hosts does not name,
//   - resolves the name itself (Asio's resolver: getaddrinfo off the event loop), keeps only
//     addresses that are public or named explicitly, and connects to exactly those (the
//     address checked is the address used: a rebinding resolver gains nothing),
//   - answers 200 and passes the tunnel's bytes through untouched (no TLS interception), or
//     forwards the plain request in origin form with "Connection: close",
//   - bounds what the desk can spend: connections open at once, bytes in all, and how long
//     an open connection may stay silent (egress_idle_seconds).
// Every refusal gets "403 Forbidden" with a one-line reason, and is reported to the sink
// (deskd serve: a NETWORK_REFUSED event), at most kRefusalReportsPerMinute a minute.

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "policy/egress_allowlist.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::egress {

/// One refused request: what was asked for and why it was refused (a short phrase such as
/// "not in allowed_hosts" or "resolves to 10.0.0.5, a private address").
struct EgressRefusal {
  std::string host;
  std::uint16_t port = 0;
  std::string why;
  std::uint64_t unreported_before = 0;  ///< refusals not reported since the last report (rate limit)
};

using RefusalSink = std::function<void(const EgressRefusal&)>;

/// How many refusals a minute reach the sink; the rest are counted in the next report.
inline constexpr std::uint64_t kRefusalReportsPerMinute = 60;

class ApiGate;

/// What became of a request the proxy did not refuse: connected to its destination, or the
/// name could not be resolved or no address answered. Refusals are NETWORK_REFUSED events.
enum class EgressOutcome { allowed, failed };
/// Told each such outcome (deskd's metrics), on the proxy's executor; it must be quick.
using EgressOutcomeObserver = std::function<void(EgressOutcome)>;

struct EgressSettings {
  policy::EgressAllowlist allowlist;
  sandbox::EgressLimits limits{};
  /// The desk's API gate (api_gate.h): serves the origins of the APIs it names; none when it
  /// names none.
  std::shared_ptr<ApiGate> gate{};
  std::chrono::milliseconds head_timeout{30'000};     ///< to send the request head
  std::chrono::milliseconds resolve_timeout{10'000};
  std::chrono::milliseconds connect_timeout{10'000};  ///< per address tried
  /// A connection over the limit: how long its request head may take before it is refused
  /// without a host named.
  std::chrono::milliseconds over_limit_head_timeout{2'000};
  /// Told what became of each request not refused; may be empty.
  EgressOutcomeObserver outcomes{};
};

/// At most this many connections over the limit are read for their head at once; past it
/// they are refused at once (no host named).
inline constexpr std::uint64_t kMaximumRefusalsReading = 8;

/// The largest request head the proxy reads (request line and headers).
inline constexpr std::size_t kMaximumRequestHeadBytes = 16 * 1024;

/// A desk's proxy, as the relay source of its sandbox spec. Its coroutines run on
/// `executor`; `sink` is called there. `names` are the exact names on the loopback addresses
/// the sandbox was given (its SandboxSpec::egress_names): the proxy maps connections back to
/// names with the very list the desk's /etc/hosts and forwarder were made from.
std::shared_ptr<sandbox::EgressRelaySource> make_egress_proxy(boost::asio::any_io_executor executor,
                                                              EgressSettings settings,
                                                              std::vector<policy::EgressName> names, RefusalSink sink);

/// For network = "allowlist": gives `spec` a proxy on `executor` for the allowlist and limits
/// the spec holds (parsed once, by its builder), reporting to `sink`. Does nothing for the
/// other modes.
Result<void> attach_egress_proxy(sandbox::SandboxSpec& spec, boost::asio::any_io_executor executor, RefusalSink sink,
                                 std::shared_ptr<ApiGate> gate = {}, EgressOutcomeObserver outcomes = {});

/// "allowlist: api.example.com, *.example.org" (or "none", "host"), for /status.
std::string describe_network(const sandbox::SandboxSettings& settings);

}  // namespace deskd::egress
