#include "runner/daemon/desk_api_gate.h"

#include <chrono>

#include "runner/desk/market_status.h"
#include "runner/events/india_time.h"
#include "sandbox/trust_bundle.h"

namespace deskd::app {
namespace {

// The rules' view of a moment, from the desk's own market calendar.
std::function<policy::ApiMoment(std::chrono::system_clock::time_point)> moments_of(
    std::shared_ptr<const desk::MarketStatus> market) {
  return [market = std::move(market)](std::chrono::system_clock::time_point now) {
    const desk::IndiaTime india = desk::india_time(now);
    policy::ApiMoment moment;
    moment.now = now;
    moment.india_minute_of_day = india.hour * 60 + india.minute;
    moment.trading_day = market->is_trading_day(india.date());
    moment.india_day = std::chrono::sys_days(india.date()).time_since_epoch().count();
    return moment;
  };
}

}  // namespace

Result<std::shared_ptr<egress::ApiGate>> make_desk_api_gate(const DeskApiGateInput& input, sandbox::SandboxSpec& spec) {
  const DeskConfig& desk = input.desk;
  auto market = std::make_shared<desk::MarketStatus>();
  if (desk.market_holidays) {
    auto loaded = desk::MarketStatus::load(*desk.market_holidays);
    if (!loaded.ok()) return Error{loaded.error().code, 0, "reading the market holidays: " + loaded.error().what};
    *market = std::move(loaded).value();
  }
  std::error_code error;
  std::filesystem::create_directories(input.state_folder, error);
  if (error) {
    return Error::make(ErrorCode::system,
                       "creating the state folder " + input.state_folder.native() + ": " + error.message());
  }
  auto ledger = egress::ApiLedger::open(input.state_folder, *input.clock);
  if (!ledger.ok()) return Error{ledger.error().code, 0, "opening the API ledger: " + ledger.error().what};

  egress::ApiGateSettings settings;
  settings.desk = desk.name;
  settings.apis = desk.apis;
  settings.ledger = *ledger;
  settings.approvals = input.approvals ? input.approvals : std::make_shared<egress::ApprovalBoard>(desk.name);
  settings.moment_at = moments_of(std::move(market));
  settings.clock = input.clock;
  settings.events = input.events;
  settings.idle_timeout = std::chrono::seconds(spec.egress_limits.idle_seconds);
  auto gate = egress::ApiGate::create(std::move(settings));
  if (!gate.ok()) return Error{gate.error().code, 0, "setting up the API gate: " + gate.error().what};

  const auto bundle = input.state_folder / "trust-bundle.pem";
  auto written = egress::write_trust_bundle(bundle, (*gate)->authority_pem());
  if (!written.ok()) return Error{written.error().code, 0, "writing the desk's trust bundle: " + written.error().what};
  sandbox::use_trust_bundle(spec, bundle);
  for (auto& entry : (*gate)->environment()) spec.environment.push_back(std::move(entry));
  return gate;
}

}  // namespace deskd::app
