#pragma once
// What the API gate's end-to-end tests share: the fake broker (e2e/fake_broker.h) as the
// [[api]] "kite" on https://broker.test:PORT (deskd connects to 127.0.0.1, trusting the
// broker's own CA through ca_file), a desk "trader" naming it with network = "allowlist"
// (and the broker's plain HTTP port as another allowed host), its key in a file beside the
// config, and the desk's turns scripted as bash commands. Each test runs under a root deskd
// and an unprivileged one (uid 4242), as the other isolation tests do.

#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/fake_broker.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {

inline constexpr uid_t kUnprivilegedGateUid = 4242;
inline constexpr const char* kGateDesk = "trader";

// Kite's real order varieties, each under a rule of its own: "regular" bounded by checks and
// a rate, "amo" by the NSE session, "co" held for a person, "iceberg" allowed as is.
inline constexpr const char* kKiteRules = R"(
  [[api.add]]
  form = "algo_id"
  value = "NSE-ALGO-0042"
  methods = ["POST"]
  path = "/orders/**"

  [[api.rule]]
  name = "quotes"
  methods = ["GET"]
  path = "/quote"
  action = "allow"

  [[api.rule]]
  name = "quote stream"
  methods = ["GET"]
  path = "/ws"
  action = "allow"

  [[api.rule]]
  name = "positions"
  methods = ["GET"]
  path = "/portfolio/**"
  action = "allow"

  [[api.rule]]
  name = "regular orders"
  methods = ["POST"]
  path = "/orders/regular"
  action = "allow"
  rate = "10/second"
  checks = ["quantity <= 100", "price * quantity <= 200000", 'exchange in ["NSE", "BSE"]']

  [[api.rule]]
  name = "after-market orders"
  methods = ["POST"]
  path = "/orders/amo"
  action = "allow"
  window = "nse_session"

  [[api.rule]]
  name = "cover orders"
  methods = ["POST"]
  path = "/orders/co"
  action = "ask"

  [[api.rule]]
  name = "iceberg orders"
  methods = ["POST"]
  path = "/orders/iceberg"
  action = "allow"
)";

class ApiGateE2eTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "runs deskd as root and as uid 4242: needs root";
    ASSERT_TRUE(broker_.ok()) << broker_.why();
  }

  bool unprivileged() const { return GetParam(); }

  /// The [[api]] table, with `api_settings` among its keys.
  std::string api_table(const std::string& api_settings) const {
    return "[[api]]\n"
           "name = \"kite\"\n"
           "origins = [\"" +
           broker_.origin() +
           "\"]\n"
           "addresses = [\"127.0.0.1\"]\n"
           "ca_file = \"" +
           broker_.ca_file() + "\"\n" + api_settings +
           "\n  [[api.credential]]\n"
           "  variable = \"KITE_API_KEY\"\n"
           "  key_file = \"kite.key\"\n"
           "  header = \"Authorization\"\n"
           "  template = \"token {key}\"\n" +
           kKiteRules;
  }

  /// A daemon whose desk plays `turns` (each a list of bash commands, one call each), with
  /// the key written and `desk_settings` in the [[desk]]; started, under the test's uid or
  /// uid 4242. `before_start` may add files to the folder.
  std::unique_ptr<ServeDaemon> start_daemon(const std::vector<std::vector<std::string>>& turns,
                                            const std::string& api_settings = "", const std::string& desk_settings = "",
                                            const std::function<void(ServeDaemon&)>& before_start = {}) {
    std::string script;
    for (const auto& commands : turns) {
      std::vector<ScriptedCall> calls;
      for (const auto& command : commands) calls.push_back(bash_call(command));
      script += scripted_turn(calls);
    }
    const std::string sandbox =
        "[desk.sandbox]\nnetwork = \"allowlist\"\nallowed_hosts = [\"127.0.0.1:" + std::to_string(broker_.http_port()) +
        "\"]\n";
    auto daemon = std::make_unique<ServeDaemon>(
        std::initializer_list<DeskSetup>{DeskSetup{
            .name = kGateDesk, .script = script, .settings = "apis = [\"kite\"]\n" + desk_settings, .tables = sandbox}},
        "",
        // Node reserves address space for WebAssembly (undici's HTTP parser) far past the
        // default 2 GiB, which an unprivileged deskd (no cgroup) sets as RLIMIT_AS.
        "memory_mb = 16384\n" + api_table(api_settings));
    std::ofstream(daemon->folder() + "/kite.key") << key_ << "\n";
    ::chmod((daemon->folder() + "/kite.key").c_str(), 0600);
    if (before_start) before_start(*daemon);
    if (unprivileged()) daemon->run_as(kUnprivilegedGateUid);
    std::string why;
    if (!daemon->start({}, &why)) {
      ADD_FAILURE() << "deskd did not start: " << why;
      return nullptr;
    }
    return daemon;
  }

  /// The desk's next turn, run to its end.
  std::vector<ToolOutcome> turn(const ServeDaemon& daemon) { return run_turn(daemon, kGateDesk, "go"); }

  /// A turn started in the background, for what happens while it waits.
  struct PendingTurn {
    std::optional<ControlConnection> events;
    std::unique_ptr<DeskctlProcess> asked;
    std::vector<boost::json::object> seen;

    std::optional<boost::json::object> wait_for(const std::string& kind, std::chrono::milliseconds timeout = 30s) {
      if (!events) return std::nullopt;
      return events->wait_for_event(is_event(kind), timeout, &seen);
    }
    std::vector<ToolOutcome> finish() {
      if (!wait_for("TURN_FINISHED", 60s)) ADD_FAILURE() << "the turn did not finish";
      if (asked) (void)asked->finish();
      return outcomes_of(seen);
    }
  };
  PendingTurn begin_turn(const ServeDaemon& daemon) {
    PendingTurn pending;
    if (auto followed = daemon.follow(kGateDesk))
      pending.events.emplace(std::move(*followed));
    else
      ADD_FAILURE() << "could not follow the desk's events";
    pending.asked = daemon.deskctl_in_background({"ask", kGateDesk, "go"});
    return pending;
  }

  /// https://broker.test:PORT + path, quoted for bash.
  std::string url(const std::string& path) const { return "'" + broker_.origin() + path + "'"; }
  /// curl's arguments for a Kite order form of `quantity` shares at `price`, tagged `tag`.
  static std::string order_form(int quantity, const std::string& tag, int price = 1500) {
    return " -d tradingsymbol=INFY -d exchange=NSE -d transaction_type=BUY -d order_type=LIMIT -d quantity=" +
           std::to_string(quantity) + " -d price=" + std::to_string(price) +
           " -d product=CNC -d validity=DAY -d tag=" + tag;
  }
  /// curl, quiet but for errors, printing " status=N" after the body.
  static std::string curl(const std::string& arguments) {
    return "curl -sS -m 60 -w ' status=%{http_code}\\n' " + arguments;
  }

  std::string ledger_path(const ServeDaemon& daemon) const {
    return daemon.folder() + "/state/desks/" + kGateDesk + "/ledger.jsonl";
  }
  std::vector<boost::json::object> ledger(const ServeDaemon& daemon) const { return json_lines(ledger_path(daemon)); }

  /// The requests the broker got whose body holds `tag=TAG`.
  std::vector<boost::json::object> tagged(const std::string& tag) const {
    std::vector<boost::json::object> found;
    for (auto& request : broker_.requests()) {
      if (request_field(request, "body").find("tag=" + tag) != std::string::npos) found.push_back(std::move(request));
    }
    return found;
  }

  /// The India date `days` from today, YYYY-MM-DD.
  static std::string india_date(int days) {
    const std::time_t moment = std::time(nullptr) + 5 * 3600 + 30 * 60 + days * 86400;
    std::tm parts{};
    ::gmtime_r(&moment, &parts);
    char text[16];
    std::strftime(text, sizeof text, "%Y-%m-%d", &parts);
    return text;
  }

  // The secret: Kite's "api_key:access_token"; the token is what the scans look for.
  const std::string access_token_ = unique_text("kitetoken");
  const std::string key_ = "kiteapikey:" + access_token_;
  const std::string authorization_ = "token " + key_;
  FakeBroker broker_{authorization_};
};

/// The desk's bash commands that decode `hex` into the secret live only in a child shell.
inline std::string hex_of(const std::string& text) {
  static const char kDigits[] = "0123456789abcdef";
  std::string encoded;
  for (unsigned char each : text) encoded += {kDigits[each >> 4], kDigits[each & 15]};
  return encoded;
}

}  // namespace deskd::e2e
