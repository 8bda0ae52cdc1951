// The one dispatch of control requests (runner/control/control_dispatch.h), which the
// control socket and the web page's POST /api/op share: an operator-only op (web_url) is
// refused to anyone but root and deskd's own uid.

#include <gtest/gtest.h>

#include "runner/control/control_dispatch.h"
#include "unit/control/control_server_fixture.h"

namespace deskd::control {
namespace {

TEST(ControlDispatchTest, WebUrlIsForTheOperatorOnlyAndOtherOpsForEveryAllowedPeer) {
  boost::asio::io_context io;
  ManualClock clock{std::chrono::system_clock::time_point(std::chrono::hours(500000))};
  test_support::FakeService service(io.get_executor(), clock);
  const auto ask = [&](std::string_view line, bool privileged) {
    std::string reply;
    const Dispatched how =
        dispatch_control_request(service, parse_control_request(line), ControlCaller{"uid 1000 (asha)", privileged},
                                 [&](std::string answered) { reply = std::move(answered); });
    EXPECT_EQ(how, Dispatched::answered);
    return test_support::json::parse(reply).as_object();
  };
  const auto refused = ask(R"({"id": 1, "op": "web_url"})", false);
  EXPECT_EQ(refused.at("ok"), false);
  EXPECT_EQ(refused.at("code"), "not_allowed");
  const auto allowed = ask(R"({"id": 2, "op": "web_url"})", true);
  EXPECT_EQ(allowed.at("ok"), true);
  EXPECT_TRUE(allowed.contains("url"));
  EXPECT_EQ(ask(R"({"id": 3, "op": "desks"})", false).at("ok"), true);
  EXPECT_EQ(ask(R"({"id": 4, "op": "status", "desk": "nope"})", false).at("code"), "unknown_desk");
  std::string nothing;
  EXPECT_EQ(dispatch_control_request(service, parse_control_request(R"({"id": 5, "op": "follow"})"),
                                     ControlCaller{"uid 0 (root)", true}, [&](std::string line) { nothing = line; }),
            Dispatched::follow);
  EXPECT_TRUE(nothing.empty());
}

}  // namespace
}  // namespace deskd::control
