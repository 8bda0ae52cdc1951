// The approval board on a real io_context: a held request is woken once by a decision (from
// the loop's thread or another), times out, leaves the board when its wait is cancelled,
// and the board holds at most kMaximumPending.

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <future>
#include <thread>

#include "runner/egress/api_approvals.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

PendingApproval order_request() {
  PendingApproval request;
  request.api = "kite";
  request.method = "POST";
  request.url = "https://api.kite.trade/orders/regular";
  request.summary = "tradingsymbol=INFY quantity=10 price=1500";
  request.sha256 = std::string(64, 'c');
  request.rule = "orders";
  return request;
}

struct Asked {
  int completions = 0;
  std::optional<Result<ApprovalDecision>> result;
  std::exception_ptr escaped;
  std::function<void()> then;  ///< called once it has ended
};

// Starts one ask() on `io`, recording how it ended in `asked`.
void start_ask(asio::io_context& io, ApprovalBoard& board, Asked& asked, std::chrono::milliseconds timeout,
               std::function<void(const PendingApproval&)> published, asio::cancellation_slot slot = {}) {
  // As the gate will: co_await ask() inside a coroutine of its own.
  auto asking = [](ApprovalBoard& on, Asked& into, std::chrono::milliseconds wait,
                   std::function<void(const PendingApproval&)> told) -> asio::awaitable<void> {
    into.result = co_await on.ask(order_request(), wait, std::move(told));
  };
  asio::co_spawn(io, asking(board, asked, timeout, std::move(published)),
                 asio::bind_cancellation_slot(slot, [&asked](std::exception_ptr escaped) {
                   ++asked.completions;
                   asked.escaped = escaped;
                   if (asked.then) asked.then();
                 }));
}

TEST(ApprovalBoardTest, ApprovingWakesTheRequestOnceAndOnlyOnce) {
  asio::io_context io;
  auto board = std::make_shared<ApprovalBoard>("nifty");
  Asked asked;
  std::string id;
  start_ask(io, *board, asked, 60s, [&](const PendingApproval& request) {
    id = request.id;
    EXPECT_EQ(request.desk, "nifty");
    EXPECT_EQ(request.expires_at - request.asked_at, 60s);
    ASSERT_EQ(board->pending().size(), 1u);
    asio::post(io, [&] {
      auto decided = board->decide(id, true, "alice (uid 1000)");
      ASSERT_TRUE(decided.ok()) << decided.error().what;
      EXPECT_EQ(decided->sha256, std::string(64, 'c'));
      auto again = board->decide(id, true, "alice (uid 1000)");
      ASSERT_FALSE(again.ok());
      EXPECT_EQ(again.error().what, "There is no request " + id + " waiting for approval on desk nifty.");
    });
  });
  io.run();
  EXPECT_TRUE(id.starts_with("ap-") && id.size() == 15) << id;
  ASSERT_EQ(asked.completions, 1);
  ASSERT_TRUE(asked.result && asked.result->ok());
  EXPECT_EQ((*asked.result)->outcome, ApprovalOutcome::approved);
  EXPECT_EQ((*asked.result)->who, "alice (uid 1000)");
  EXPECT_TRUE(board->pending().empty());
  EXPECT_FALSE(board->decide(id, false, "bob").ok()) << "a request that was answered cannot be decided again";
}

TEST(ApprovalBoardTest, DenyingWakesTheRequestDenied) {
  asio::io_context io;
  ApprovalBoard board("nifty");
  Asked asked;
  start_ask(io, board, asked, 60s, [&](const PendingApproval& request) {
    asio::post(io, [&board, id = request.id] { ASSERT_TRUE(board.decide(id, false, "bob").ok()); });
  });
  io.run();
  ASSERT_TRUE(asked.result && asked.result->ok());
  EXPECT_EQ((*asked.result)->outcome, ApprovalOutcome::denied);
  EXPECT_EQ((*asked.result)->who, "bob");
}

TEST(ApprovalBoardTest, AnUnansweredRequestTimesOutAndLeavesTheBoard) {
  asio::io_context io;
  ApprovalBoard board("nifty");
  Asked asked;
  std::string id;
  start_ask(io, board, asked, 20ms, [&](const PendingApproval& request) { id = request.id; });
  io.run();
  ASSERT_TRUE(asked.result && asked.result->ok());
  EXPECT_EQ((*asked.result)->outcome, ApprovalOutcome::timed_out);
  EXPECT_EQ((*asked.result)->who, "");
  EXPECT_TRUE(board.pending().empty());
  EXPECT_FALSE(board.decide(id, true, "late").ok());
}

TEST(ApprovalBoardTest, ADecisionFromAnotherThreadWakesTheRequest) {
  asio::io_context io;
  ApprovalBoard board("nifty");
  Asked asked;
  std::promise<std::string> published_id;
  start_ask(io, board, asked, 60s, [&](const PendingApproval& request) { published_id.set_value(request.id); });
  std::thread control([&] {
    const std::string id = published_id.get_future().get();
    EXPECT_TRUE(board.decide(id, true, "carol").ok());
  });
  io.run();
  control.join();
  ASSERT_TRUE(asked.result && asked.result->ok());
  EXPECT_EQ((*asked.result)->outcome, ApprovalOutcome::approved);
}

TEST(ApprovalBoardTest, CancellingTheWaitTakesTheRequestOffTheBoard) {
  asio::io_context io;
  ApprovalBoard board("nifty");
  Asked asked;
  asio::cancellation_signal stop;
  std::string id;
  start_ask(
      io, board, asked, 60s,
      [&](const PendingApproval& request) {
        id = request.id;
        asio::post(io, [&] { stop.emit(asio::cancellation_type::terminal); });
      },
      stop.slot());
  io.run();
  EXPECT_EQ(asked.completions, 1);
  EXPECT_TRUE(asked.escaped) << "cancellation passes through as operation_aborted";
  EXPECT_TRUE(board.pending().empty());
  EXPECT_FALSE(board.decide(id, true, "alice").ok());
}

TEST(ApprovalBoardTest, TheSixtyFifthWaitingRequestIsRefused) {
  asio::io_context io;
  ApprovalBoard board("nifty");
  std::vector<Asked> held(ApprovalBoard::kMaximumPending);
  for (auto& asked : held) start_ask(io, board, asked, 60s, {});
  Asked one_more;
  // Once the 65th is refused, deny the 64 held so that the loop ends.
  one_more.then = [&] {
    ASSERT_TRUE(one_more.result.has_value());
    EXPECT_FALSE(one_more.result->ok());
    EXPECT_EQ(one_more.result->error().code, ErrorCode::refused);
    const auto pending = board.pending();
    EXPECT_EQ(pending.size(), ApprovalBoard::kMaximumPending);
    for (const auto& request : pending) EXPECT_TRUE(board.decide(request.id, false, "cleanup").ok());
  };
  start_ask(io, board, one_more, 60s, [](const PendingApproval&) { ADD_FAILURE() << "never published"; });
  io.run();
  EXPECT_EQ(one_more.completions, 1);
  for (const auto& asked : held) {
    ASSERT_TRUE(asked.result && asked.result->ok());
    EXPECT_EQ((*asked.result)->outcome, ApprovalOutcome::denied);
  }
}

}  // namespace
}  // namespace deskd::egress
