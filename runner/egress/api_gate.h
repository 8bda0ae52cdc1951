#pragma once
// A desk's API gate: the part of its egress proxy that serves the origins of the [[api]]s it
// names. A connection to a gated origin (to the name's loopback address, or a CONNECT or
// SOCKS5 request for it) ends here: deskd presents a certificate for the host minted by the
// desk's own CA (desk_authority.h), reads each HTTP/1.1 request whole (its body bounded),
// and for each:
//   - refuses a request that carries another API's placeholder (a leak attempt), a Host
//     that is not the origin's, or that the rules refuse (policy/api_rules.h); 403 with a JSON
//     body naming the rule and why, so the model can adapt;
//   - holds an `ask` rule's request for a person (approvals: ApprovalBoard), bound to its
//     SHA-256;
//   - appends its line to the ledger before anything goes upstream (api_ledger.h);
//   - adds the fixed fields, puts each credential where its placeholder stands (or where
//     the config says when the desk wrote none), and sends it upstream over TLS verified
//     against the system store or the API's ca_file, with SNI and Host the origin's;
//   - passes a WebSocket upgrade through once its request has passed.
// Malformed HTTP gets 400, a body over the bound 413, an upstream that fails 502 with the
// reason: nothing unchecked goes through, and nothing a desk sends crashes deskd.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "policy/api_rules.h"
#include "runner/egress/api_approvals.h"
#include "runner/egress/api_ledger.h"
#include "runner/egress/desk_authority.h"
#include "runner/egress/report_limiter.h"

namespace deskd::egress {

/// One credential as the gate holds it: the secret, and the placeholder the desk sees.
struct GateCredential {
  policy::ApiCredential config;
  std::string key;
  std::string placeholder;
};

/// One API as the gate serves it.
struct GatedApi {
  policy::ApiSpec spec;
  std::vector<GateCredential> credentials;
};

/// Publishes one of the gate's events (API_CALL, API_REFUSED, API_CALL_AWAITING_APPROVAL).
using ApiEventSink = std::function<void(const std::string& kind, boost::json::object data)>;

/// At most this many API_REFUSED events a minute; the rest are counted in the next one.
inline constexpr std::uint64_t kApiRefusalReportsPerMinute = 60;

/// The largest response the gate relays (read whole to be hashed for the ledger).
inline constexpr std::size_t kMaximumApiResponseBytes = std::size_t{64} << 20;

struct ApiGateSettings {
  std::string desk;
  std::vector<policy::ApiSpec> apis;
  /// Reads each credential's key file (deskd's right, never the desk's).
  std::shared_ptr<ApiLedger> ledger;
  std::shared_ptr<ApprovalBoard> approvals;
  /// The rules' view of a moment: India minute of day, trading day (the desk's market).
  std::function<policy::ApiMoment(std::chrono::system_clock::time_point)> moment_at;
  std::shared_ptr<const Clock> clock;
  ApiEventSink events;
  std::chrono::milliseconds handshake_timeout{10'000};
  std::chrono::milliseconds request_timeout{30'000};    ///< a request's head and body
  std::chrono::milliseconds idle_timeout{120'000};      ///< a kept-alive connection with no request
  std::chrono::milliseconds connect_timeout{10'000};    ///< upstream, each address
  std::chrono::milliseconds response_timeout{120'000};  ///< upstream's whole response
};

/// The placeholder for `variable`: worthless anywhere but in this desk's gate.
std::string make_placeholder(std::string_view variable);

class ApiGate {
 public:
  /// Reads every credential's key file, makes the placeholders and the desk's CA. The error
  /// names the API and the file.
  static Result<std::shared_ptr<ApiGate>> create(ApiGateSettings settings);

  /// The API that covers `host`:`port`, or nullptr.
  const GatedApi* api_for(std::string_view host, std::uint16_t port) const;
  /// The origin of that API for `host`:`port` (call after api_for found one).
  const policy::ApiOrigin& origin_for(const GatedApi& api, std::string_view host, std::uint16_t port) const;
  /// The variable whose placeholder `bytes` holds, if any (a request to a place not gated for
  /// it carries it: a leak attempt).
  std::optional<std::string> placeholder_in(std::string_view bytes) const;
  /// The length of the longest placeholder (what a search across chunks must keep).
  std::size_t longest_placeholder() const;
  /// NAME=placeholder for each credential: what the desk's environment gets.
  std::vector<std::string> environment() const;
  /// The desk's CA certificate (PEM), for its trust bundle.
  const std::string& authority_pem() const;
  const ApprovalBoard& approvals() const { return *settings_.approvals; }

  /// Counts bytes against the desk's egress budget; false once it is spent.
  using Charge = std::function<bool(std::uint64_t bytes)>;

  /// Serves `client`, connected to `origin` of `api` (TLS is shaken here for https), until
  /// it ends. `already` holds bytes the client sent that were read before; every request
  /// and response is charged to `charge` (none: no budget). Never throws but for
  /// cancellation.
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket client, const GatedApi& api,
                                     const policy::ApiOrigin& origin, std::string already, Charge charge = {});

  /// Reports a refusal as API_REFUSED, within the rate limit.
  void report_refusal(boost::json::object data);

  ApiGate(ApiGateSettings settings, std::vector<GatedApi> apis, std::shared_ptr<DeskAuthority> authority);

 private:
  friend struct GateExchange;
  ApiGateSettings settings_;
  std::vector<GatedApi> apis_;
  std::shared_ptr<DeskAuthority> authority_;
  std::mutex rules_mutex_;
  std::vector<policy::ApiRuleBook> rule_books_;                           ///< one per API, same order
  std::vector<std::shared_ptr<boost::asio::ssl::context>> upstream_tls_;  ///< one per API
  ReportLimiter refusal_reports_{kApiRefusalReportsPerMinute};
};

}  // namespace deskd::egress
