#include "runner/control_protocol/control_protocol.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "runner/control/control_ops.h"
#include "runner/control/event_history.h"

namespace deskd::control {
namespace {

namespace json = boost::json;

TEST(ControlProtocol, ParsesASendRequestAndKeepsItsId) {
  auto parsed = parse_control_request(R"({"id": "a1", "op": "send", "desk": "nifty", "text": "hello"})");
  ASSERT_FALSE(parsed.problem) << *parsed.problem;
  EXPECT_EQ(parsed.request.id, json::value("a1"));
  EXPECT_EQ(parsed.request.op, "send");
  EXPECT_EQ(parsed.request.desk, "nifty");
  EXPECT_EQ(parsed.request.text, "hello");
}

TEST(ControlProtocol, RefusesWhatIsNotARequest) {
  EXPECT_EQ(*parse_control_request("not json").problem, "The request is not JSON: syntax error.");
  EXPECT_EQ(*parse_control_request("[1, 2]").problem, "The request must be a JSON object.");
  EXPECT_EQ(*parse_control_request(R"({"id": 3})").problem, "The request needs an 'op' string.");
  auto unknown = parse_control_request(R"({"id": 4, "op": "reboot"})");
  EXPECT_EQ(unknown.problem_code, code::kUnknownOperation);
  EXPECT_EQ(unknown.request.id, json::value(4));  // echoed even though the request is refused
}

// The protocol's list of operations: the parser knows exactly its rows and checks the
// fields each row needs; the server's table answers exactly those, in the same order, and
// each row answered at once has its handler.
TEST(ControlProtocol, TheOperationTableIsWhatTheParserKnows) {
  const auto unknown = parse_control_request(R"({"op": "reboot"})");
  ASSERT_EQ(control_ops().size(), operations().size());
  for (std::size_t index = 0; index < operations().size(); ++index) {
    const Operation& operation = operations()[index];
    const ControlOp& row = control_ops()[index];
    SCOPED_TRACE(std::string(operation.name));
    EXPECT_EQ(row.operation.name, operation.name);
    EXPECT_EQ(row.operation.needs, operation.needs);
    EXPECT_NE(unknown.problem->find(std::string(operation.name)), std::string::npos) << *unknown.problem;
    EXPECT_EQ(find_operation(operation.name), &operation);
    EXPECT_EQ(find_control_op(operation.name), &row);
    EXPECT_EQ(row.how == OpAnswer::now, row.answer != nullptr);
    EXPECT_EQ(row.how == OpAnswer::later, row.answer_later != nullptr);
    json::object request{{"op", operation.name}, {"desk", "a"}, {"text", "t"},
                         {"proposal", "p-1"},    {"follow", 1}, {"approval", "ap-0123456789ab"}};
    EXPECT_FALSE(parse_control_request(json::serialize(request)).problem);
    for (const auto& [field, bit] :
         {std::pair{"desk", kNeedsDesk}, std::pair{"text", kNeedsText}, std::pair{"proposal", kNeedsProposal},
          std::pair{"follow", kNeedsFollow}, std::pair{"approval", kNeedsApproval}}) {
      json::object lacking = request;
      lacking.erase(field);
      EXPECT_EQ(parse_control_request(json::serialize(lacking)).problem.has_value(), (operation.needs & bit) != 0)
          << field;
    }
  }
  EXPECT_EQ(*unknown.problem,
            "Unknown operation 'reboot'; the operations are desks, status, send, follow, unfollow, commands, "
            "proposals, accept, reject, reload, approvals, approve, deny, ledger, budget, refusals, metrics, spend and web_url.");
  EXPECT_EQ(find_operation("reboot"), nullptr);
  EXPECT_EQ(find_control_op("reboot"), nullptr);
}

TEST(ControlProtocol, NamesTheFieldAnOperationLacksOrMistypes) {
  EXPECT_EQ(*parse_control_request(R"({"op": "send", "desk": "nifty"})").problem, "'send' needs a non-empty 'text'.");
  EXPECT_EQ(*parse_control_request(R"({"op": "send", "text": "x"})").problem, "'send' needs a non-empty 'desk'.");
  EXPECT_EQ(*parse_control_request(R"({"op": "accept"})").problem, "'accept' needs a non-empty 'proposal'.");
  EXPECT_EQ(*parse_control_request(R"({"op": "status", "desk": 7})").problem, "'desk' must be a string.");
  EXPECT_EQ(*parse_control_request(R"({"op": "follow", "replay": "yes"})").problem, "'replay' must be true or false.");
  EXPECT_TRUE(parse_control_request(R"({"op": "unfollow"})").problem);
  EXPECT_FALSE(parse_control_request(R"({"op": "desks"})").problem);
  EXPECT_EQ(*parse_control_request(R"({"op": "approve"})").problem, "'approve' needs a non-empty 'approval'.");
  EXPECT_EQ(*parse_control_request(R"({"op": "deny", "approval": 3})").problem, "'approval' must be a string.");
  EXPECT_EQ(*parse_control_request(R"({"op": "ledger"})").problem, "'ledger' needs a non-empty 'desk'.");
  EXPECT_EQ(*parse_control_request(R"({"op": "ledger", "desk": "a", "verify": "yes"})").problem,
            "'verify' must be true or false.");
  const auto ledger = parse_control_request(R"({"op": "ledger", "desk": "a", "since": "2026-12-01", "verify": true})");
  ASSERT_FALSE(ledger.problem);
  EXPECT_EQ(ledger.request.since, "2026-12-01");
  EXPECT_TRUE(ledger.request.verify);
  EXPECT_EQ(*parse_control_request(R"({"op": "budget"})").problem, "'budget' needs a non-empty 'desk'.");
  EXPECT_EQ(*parse_control_request(R"({"op": "budget", "desk": "a", "add_usd": "2"})").problem,
            "'add_usd' must be a number of US dollars.");
  const auto raise = parse_control_request(R"({"op": "budget", "desk": "a", "add_usd": 2.5})");
  ASSERT_FALSE(raise.problem);
  EXPECT_EQ(raise.request.add_usd, 2.5);
  EXPECT_FALSE(parse_control_request(R"({"op": "budget", "desk": "a"})").request.add_usd);
  EXPECT_FALSE(parse_control_request(R"({"op": "approvals"})").problem) << "every desk's without a desk";
  EXPECT_FALSE(parse_control_request(R"({"op": "status", "desk": null})").problem);
}

TEST(ControlProtocol, RepliesAreOneJsonObjectEchoingTheId) {
  EXPECT_EQ(reply_ok(json::value(7), {{"trigger", "t-1"}}), R"({"id":7,"ok":true,"trigger":"t-1"})");
  EXPECT_EQ(reply_error(nullptr, code::kUnknownDesk, "There is no desk 'x'."),
            R"({"id":null,"ok":false,"code":"unknown_desk","error":"There is no desk 'x'."})");
  EXPECT_EQ(reply_event(json::value("f"), {{"kind", "TURN_STARTED"}}), R"({"id":"f","event":{"kind":"TURN_STARTED"}})");
}

desk::Event event(std::uint64_t number, std::string desk_name) {
  desk::Event made;
  made.id = "e-" + std::to_string(number);
  made.desk = std::move(desk_name);
  made.kind = "MODEL_TEXT";
  return made;
}

TEST(EventHistory, ReplaysOneDeskAfterAnEventId) {
  EventHistory history;
  for (std::uint64_t number = 1; number <= 6; ++number) history.add(event(number, number % 2 ? "a" : "b"));
  auto replay = history.since("a", 2);
  ASSERT_EQ(replay.events.size(), 2u);
  EXPECT_EQ(replay.events[0].id, "e-3");
  EXPECT_EQ(replay.events[1].id, "e-5");
  EXPECT_TRUE(replay.complete);
  EXPECT_EQ(history.since("", std::nullopt).events.size(), 6u);
}

TEST(EventHistory, SaysWhenEventsAfterTheIdWereAlreadyDropped) {
  EventHistory history(3);
  for (std::uint64_t number = 1; number <= 5; ++number) history.add(event(number, "a"));
  auto replay = history.since("a", 1);
  EXPECT_FALSE(replay.complete);  // e-2 is gone
  ASSERT_EQ(replay.events.size(), 3u);
  EXPECT_EQ(replay.events.front().id, "e-3");
  EXPECT_TRUE(history.since("a", 2).complete);
}

TEST(EventHistory, IsCappedInBytesAndKeepsTheNewestEventEvenWhenHuge) {
  EventHistory history(10000, 100 * 1024);
  for (std::uint64_t number = 1; number <= 50; ++number) {
    desk::Event made = event(number, "a");
    made.data["text"] = std::string(10 * 1024, 'x');
    history.add(made);
  }
  EXPECT_LE(history.bytes(), 100u * 1024);
  EXPECT_GE(history.size(), 8u);
  EXPECT_LE(history.size(), 10u);
  EXPECT_FALSE(history.since("a", std::nullopt).complete);
  EXPECT_EQ(history.since("a", std::nullopt).events.back().id, "e-50");
  desk::Event huge = event(51, "a");
  huge.data["text"] = std::string(1 << 20, 'y');
  history.add(huge);
  EXPECT_EQ(history.size(), 1u);
  EXPECT_EQ(history.since("a", 50).events.size(), 1u);
}

TEST(EventHistory, ReplaysAPageAtATimeAndSaysWhenMoreIsKept) {
  EventHistory history;
  for (std::uint64_t number = 1; number <= 100; ++number) {
    desk::Event made = event(number, number % 2 ? "a" : "b");
    made.data["text"] = std::string(1000, 'x');
    history.add(made);
  }
  const std::size_t page_bytes = 10 * desk::approximate_bytes(history.since("a", 0, 1).events.front()) + 50;
  std::vector<std::string> seen;
  std::optional<std::uint64_t> after;
  int pages = 0;
  for (;;) {
    auto page = history.since("a", after, page_bytes);
    ++pages;
    ASSERT_FALSE(page.events.empty());
    EXPECT_LE(page.events.size(), 10u);
    for (const auto& kept : page.events) seen.push_back(kept.id);
    after = event_number(page.events.back().id);
    if (!page.more) break;
  }
  EXPECT_EQ(pages, 5);
  ASSERT_EQ(seen.size(), 50u);
  EXPECT_EQ(seen.front(), "e-1");
  EXPECT_EQ(seen.back(), "e-99");
  // A page holds at least one event, however small the budget.
  EXPECT_EQ(history.since("", 10, 1).events.size(), 1u);
  EXPECT_TRUE(history.since("", 10, 1).more);
}

TEST(ControlProtocol, RefusesASendTooLargeAsTooLarge) {
  const std::string line = json::serialize(
      json::object{{"id", 3}, {"op", "send"}, {"desk", "a"}, {"text", std::string(kMaximumSendTextBytes + 1, 'x')}});
  ParsedRequest parsed = parse_control_request(line);
  ASSERT_TRUE(parsed.problem);
  EXPECT_EQ(parsed.problem_code, "too_large");
  EXPECT_EQ(parsed.request.id, 3);
  EXPECT_NE(parsed.problem->find("262145 bytes"), std::string::npos) << *parsed.problem;
  const std::string largest = json::serialize(
      json::object{{"id", 4}, {"op", "send"}, {"desk", "a"}, {"text", std::string(kMaximumSendTextBytes, 'x')}});
  EXPECT_FALSE(parse_control_request(largest).problem);
}

TEST(EventHistory, ReadsEventNumbers) {
  EXPECT_EQ(event_number("e-42"), 42u);
  EXPECT_FALSE(event_number("e-"));
  EXPECT_FALSE(event_number("e-4x"));
  EXPECT_FALSE(event_number("42"));
}

}  // namespace
}  // namespace deskd::control
