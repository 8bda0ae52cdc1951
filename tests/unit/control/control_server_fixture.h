#pragma once
// The control server against a fake daemon, in process: real Unix sockets, a real event
// loop on its own thread, and blocking clients in the test's threads. Shared by the control
// server's test files.

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <filesystem>
#include <thread>

#include "base/clock.h"
#include "runner/control/control_server.h"
#include "runner/control/control_service.h"
#include "runner/control_protocol/control_protocol.h"
#include "runner/deskctl/control_client.h"

namespace deskd::control::test_support {

namespace asio = boost::asio;
namespace json = boost::json;

class FakeService final : public ControlService {
 public:
  FakeService(asio::any_io_executor executor, const Clock& clock) : executor_(std::move(executor)), bus(clock) {
    bus.add_sink([this](const desk::Event& event) { history.add(event); });
  }
  bool has_desk(const std::string& name) const override { return name == "a"; }
  std::vector<DeskSummary> desks() const override { return {DeskSummary{"a", "dry_run", "/a", "idle", {}, {}}}; }
  DaemonStatus daemon_status() const override { return DaemonStatus{"2026-11-30T09:14:05+05:30", false, desks()}; }
  Result<DeskStatus> status(const std::string&) const override { return DeskStatus{desks().front(), {}, {}}; }
  void send(const std::string&, const std::string& text, const std::string& sender,
            std::function<void(Result<std::string>)> sent) override {
    if (text == "refuse me") return sent(Error::make(ErrorCode::refused, "No."));
    last_sender = sender;
    sent(std::string("t-1"));
  }
  Result<std::vector<desk::CommandEntry>> commands(const std::string&) const override {
    return std::vector<desk::CommandEntry>{};
  }
  Result<std::vector<tools::Proposal>> proposals(const std::string&) const override {
    return std::vector<tools::Proposal>{};
  }
  Result<tools::Proposal> decide(const std::string& id, bool, const std::string&) override {
    return Error::make(ErrorCode::not_found, "There is no proposal '" + id + "'.");
  }
  void reload(const std::string& who, std::function<void(Result<ReloadOutcome>)> done) override {
    reloads.push_back(who);
    ReloadOutcome outcome;
    outcome.kept = {"one"};
    done(outcome);
  }
  Result<std::vector<ApprovalSummary>> approvals(const std::string& desk) const override {
    if (!desk.empty() && desk != "a") return Error::make(ErrorCode::not_found, "There is no desk '" + desk + "'.");
    return std::vector<ApprovalSummary>{waiting_approval()};
  }
  Result<ApprovalSummary> decide_approval(const std::string& id, bool approve, const std::string& who) override {
    if (id != "ap-0123456789ab") {
      return Error::make(ErrorCode::not_found, "There is no request " + id + " waiting for approval on desk a.");
    }
    ApprovalSummary decided = waiting_approval();
    decided.decision = approve ? "approved" : "denied";
    decided.by = who;
    return decided;
  }
  Result<std::vector<DeskSpend>> spend(const std::string& desk) const override {
    return std::vector<DeskSpend>{{desk.empty() ? "one" : desk, true, {}}};
  }
  Result<desk::BudgetStatus> budget(const std::string&, std::optional<double> add_usd, const std::string&) override {
    desk::BudgetStatus status;
    status.caps.daily_usd = 5.0;
    status.added_usd = add_usd.value_or(0);
    status.spent_usd = 3.8;
    status.resets = "2026-12-01 00:00 India time";
    return status;
  }
  void ledger(const std::string&, const std::string& since, bool verify,
              std::function<void(Result<LedgerReading>)> done) override {
    if (since == "yesterday") return done(Error::make(ErrorCode::invalid_argument, "'yesterday' is not a time."));
    LedgerReading reading;
    reading.lines = {R"({"seq":1,"prev":"00"})", R"({"seq":2,"prev":"ab"})"};
    if (verify) {
      reading.verified = false;
      reading.verified_lines = 2;
      reading.problem = "ledger.jsonl:2: prev does not match";
    }
    // Later, as the daemon answers once its thread has read the files.
    asio::post(executor_, [done = std::move(done), reading = std::move(reading)] { done(reading); });
  }
  static ApprovalSummary waiting_approval() {
    ApprovalSummary approval;
    approval.id = "ap-0123456789ab";
    approval.desk = "a";
    approval.api = "kite";
    approval.method = "POST";
    approval.url = "https://api.kite.trade/orders/regular";
    approval.summary = "quantity=10 price=1500";
    approval.sha256 = std::string(64, 'c');
    approval.rule = "orders";
    approval.asked_at = "2026-11-30T09:14:05+05:30";
    approval.expires_at = "2026-11-30T09:15:05+05:30";
    approval.expires_in_seconds = 60;
    return approval;
  }
  std::string metrics_text() override { return "# HELP deskd_test A test.\n# TYPE deskd_test gauge\ndeskd_test 1\n"; }
  Result<WebLoginLink> web_url() override { return WebLoginLink{"http://127.0.0.1:1/login?token=code", 300}; }
  std::shared_ptr<desk::EventSubscription> subscribe() override { return bus.subscribe(executor_, 64); }
  EventHistory::Replay replay(const std::string& desk, std::optional<std::uint64_t> after,
                              std::size_t maximum_bytes) const override {
    return history.since(desk, after, maximum_bytes);
  }

  asio::any_io_executor executor_;
  desk::EventBus bus;
  EventHistory history;
  std::string last_sender;
  std::vector<std::string> reloads;
};

class ControlServerTest : public ::testing::Test {
 protected:
  /// Lets a test file change the server's settings before it opens.
  virtual void adjust(ControlServerSettings&) {}

  void SetUp() override {
    char folder_template[] = "/var/tmp/deskd-control-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_template), nullptr);
    folder_ = folder_template;
    socket_ = folder_ / "run" / "deskd.sock";
    service_ = std::make_unique<FakeService>(io_.get_executor(), clock_);
    ControlServerSettings chosen = settings();
    adjust(chosen);
    auto server = ControlServer::open(io_.get_executor(), std::move(chosen), *service_);
    ASSERT_TRUE(server.ok()) << server.error().what;
    server_ = std::move(server).value();
    asio::co_spawn(io_, server_->run(), asio::detached);
    thread_ = std::thread([this] {
      auto guard = asio::make_work_guard(io_);
      io_.run();
    });
  }

  void TearDown() override {
    if (thread_.joinable()) {
      asio::post(io_, [this] {
        server_->close();
        io_.stop();
      });
      thread_.join();
    }
    server_.reset();
    std::filesystem::remove_all(folder_);
  }

  ControlServerSettings settings() { return ControlServerSettings{socket_, std::nullopt, PeerPolicy(::geteuid(), {}, {}), {}}; }

  ControlClient connect() {
    auto client = ControlClient::connect(socket_);
    EXPECT_TRUE(client.ok()) << client.error().what;
    return std::move(client).value();
  }

  static json::object next(ControlClient& client) {
    auto line = client.read();
    EXPECT_TRUE(line.ok());
    EXPECT_TRUE(line.ok() && line->has_value()) << "the server closed the connection";
    return line.ok() && *line ? **line : json::object{};
  }

  SystemClock clock_;
  asio::io_context io_;
  std::filesystem::path folder_, socket_;
  std::unique_ptr<FakeService> service_;
  std::unique_ptr<ControlServer> server_;
  std::thread thread_;
};

}  // namespace deskd::control::test_support
