#include "runner/desk/budget_keeper.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

namespace deskd::desk {
namespace {

namespace asio = boost::asio;
using std::chrono::year;

TimePoint budget_ist(int y, unsigned m, unsigned d, int hour, int minute, int second = 0) {
  return india_time_point(IndiaDate{year{y} / m / d}, hour, minute, second);
}

// $1 a million input tokens, $2 a million output: a call of 10,000 input tokens and the
// keeper's max_tokens of 100,000 has a worst case of $0.01 + $0.20 = $0.21.
const PriceTable kBudgetPrices = {{"model-a", ModelPrice{1.0, 2.0, 0.0, 0.0}}};
constexpr std::uint32_t kMaxTokens = 100'000;
constexpr std::uint64_t kInput = 10'000;
constexpr double kWorstCase = 0.21;

class BudgetKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "deskd-budget-XXXXXX").native();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    usage_ = std::make_unique<UsageTracker>(clock_, root_ / "usage.json", kBudgetPrices, "model-a");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  BudgetKeeper keeper(BudgetCaps caps) {
    return BudgetKeeper(clock_, *usage_, caps, kMaxTokens, root_ / "budget.json");
  }

  static BudgetReservation reserved(BudgetKeeper& keeper, std::uint64_t input = kInput) {
    auto answer = keeper.reserve(input);
    if (auto* refusal = std::get_if<BudgetRefusal>(&answer)) {
      ADD_FAILURE() << "refused: " << refusal->sentence;
      return {};
    }
    return std::get<BudgetReservation>(std::move(answer));
  }

  // Settles on an io_context of its own: the usage file is saved off it, then it resumes.
  static void settle(BudgetKeeper& keeper, BudgetReservation reservation, Usage usage) {
    asio::io_context io;
    bool saved = false;
    asio::co_spawn(io, keeper.settle_off_loop(std::move(reservation), "model-a", usage),
                   [&](std::exception_ptr error, Result<void> result) { saved = !error && result.ok(); });
    io.run();
    EXPECT_TRUE(saved);
  }

  std::filesystem::path root_;
  ManualClock clock_{budget_ist(2026, 11, 30, 23, 0)};
  std::unique_ptr<UsageTracker> usage_;
};

TEST_F(BudgetKeeperTest, AReservationHoldsTheWorstCaseUntilItIsSettledWithTheRealUsage) {
  BudgetKeeper budget = keeper(BudgetCaps{1.0, std::nullopt, std::nullopt});
  BudgetReservation reservation = reserved(budget);
  EXPECT_NEAR(reservation.usd(), kWorstCase, 1e-12);
  EXPECT_EQ(reservation.tokens(), kInput + kMaxTokens);
  EXPECT_NEAR(budget.status().reserved_usd, kWorstCase, 1e-12);
  EXPECT_EQ(budget.status().spent_usd, 0);

  settle(budget, std::move(reservation), Usage{10'000, 1'000, 0, 0});
  const BudgetStatus after = budget.status();
  EXPECT_EQ(after.reserved_usd, 0);
  EXPECT_EQ(after.reserved_tokens, 0u);
  EXPECT_NEAR(after.spent_usd, 0.012, 1e-12);  // what the usage tracker counted, once
  EXPECT_EQ(usage_->today().models.at("model-a").requests, 1u);
  EXPECT_EQ(budget.context_line(), "budget: $0.99 of $1.00 left today");
}

TEST_F(BudgetKeeperTest, AFailedCallsReservationIsReleasedAndNothingIsSpent) {
  BudgetKeeper budget = keeper(BudgetCaps{1.0, std::nullopt, std::nullopt});
  { BudgetReservation reservation = reserved(budget); }
  EXPECT_EQ(budget.status().reserved_usd, 0);
  EXPECT_EQ(budget.status().spent_usd, 0);
  EXPECT_TRUE(usage_->today().models.empty());
}

TEST_F(BudgetKeeperTest, ACallThatDoesNotFitIsRefusedNamingTheCap) {
  BudgetKeeper budget = keeper(BudgetCaps{0.5, std::nullopt, std::nullopt});
  BudgetReservation first = reserved(budget);
  BudgetReservation second = reserved(budget);
  auto third = budget.reserve(kInput);
  ASSERT_TRUE(std::holds_alternative<BudgetRefusal>(third));
  const BudgetRefusal& refusal = std::get<BudgetRefusal>(third);
  EXPECT_EQ(refusal.cap, "daily_usd");
  EXPECT_EQ(refusal.value, 0.5);
  EXPECT_NEAR(refusal.reserved, 2 * kWorstCase, 1e-12);
  EXPECT_NEAR(refusal.asked, kWorstCase, 1e-12);
  EXPECT_EQ(refusal.resets, "2026-12-01 00:00 India time");
  EXPECT_NE(refusal.sentence.find("the desk's daily budget of $0.50 is reached"), std::string::npos)
      << refusal.sentence;
  EXPECT_EQ(refusal.data().at("cap"), "daily_usd");
  // Reserved is not spent: the desk is not at its cap, only this call does not fit.
  EXPECT_FALSE(budget.at_daily_cap());
}

TEST_F(BudgetKeeperTest, ReservationsFromManyThreadsAtOnceNeverOvershoot) {
  // Sixteen threads start a call at the same moment, fifty times each, and every call that
  // is made uses its whole worst case: $1.00 holds four of them and never a fifth.
  BudgetKeeper budget = keeper(BudgetCaps{1.0, std::nullopt, std::nullopt});
  constexpr int kThreads = 16;
  std::latch start(kThreads);
  std::atomic<int> made{0};
  std::atomic<bool> overshot{false};
  std::vector<std::thread> threads;
  for (int index = 0; index < kThreads; ++index) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int attempt = 0; attempt < 50; ++attempt) {
        auto answer = budget.reserve(kInput);
        if (!std::holds_alternative<BudgetReservation>(answer)) continue;
        const BudgetStatus now = budget.status();
        if (now.spent_usd + now.reserved_usd > 1.0 + 1e-9) overshot = true;
        ++made;
        settle(budget, std::get<BudgetReservation>(std::move(answer)), Usage{kInput, kMaxTokens, 0, 0});
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(overshot);
  EXPECT_EQ(made.load(), 4);
  EXPECT_NEAR(budget.status().spent_usd, 4 * kWorstCase, 1e-9);
  EXPECT_LE(budget.status().spent_usd, 1.0);
  EXPECT_EQ(budget.status().reserved_usd, 0);
}

TEST_F(BudgetKeeperTest, ThePerTurnCapCountsTheTurnsCallsAndStartsAgainWithTheNextTurn) {
  BudgetKeeper budget = keeper(BudgetCaps{std::nullopt, std::nullopt, 0.5});
  budget.begin_turn();
  settle(budget, reserved(budget), Usage{kInput, kMaxTokens, 0, 0});  // $0.21 spent in the turn
  BudgetReservation open = reserved(budget);                          // $0.21 reserved in it
  auto third = budget.reserve(kInput);
  ASSERT_TRUE(std::holds_alternative<BudgetRefusal>(third));
  EXPECT_EQ(std::get<BudgetRefusal>(third).cap, "per_turn_usd");
  EXPECT_EQ(std::get<BudgetRefusal>(third).resets, "with the next turn");
  EXPECT_NE(std::get<BudgetRefusal>(third).sentence.find("the turn's budget of $0.50 is reached"), std::string::npos);
  open = BudgetReservation();
  budget.end_turn();
  budget.begin_turn();
  BudgetReservation next_turn_first = reserved(budget);
  BudgetReservation next_turn_second = reserved(budget);
  EXPECT_TRUE(next_turn_second.held());
}

TEST_F(BudgetKeeperTest, TheTokenCapCountsInputAndMaxTokens) {
  BudgetKeeper budget = keeper(BudgetCaps{std::nullopt, 250'000, std::nullopt});
  BudgetReservation first = reserved(budget);
  BudgetReservation second = reserved(budget);  // 220,000 tokens reserved
  auto third = budget.reserve(kInput);
  ASSERT_TRUE(std::holds_alternative<BudgetRefusal>(third));
  EXPECT_EQ(std::get<BudgetRefusal>(third).cap, "daily_tokens");
  EXPECT_NE(std::get<BudgetRefusal>(third).sentence.find("250,000 tokens"), std::string::npos);
  settle(budget, std::move(first), Usage{10'000, 5'000, 0, 0});
  EXPECT_EQ(budget.status().spent_tokens, 15'000u);
  EXPECT_EQ(budget.context_line(), "budget: 125,000 of 250,000 tokens left today");
}

TEST_F(BudgetKeeperTest, TheDailyCapResetsAtIndiaMidnight) {
  BudgetKeeper budget = keeper(BudgetCaps{0.5, std::nullopt, std::nullopt});
  settle(budget, reserved(budget), Usage{0, 100'000, 0, 0});
  settle(budget, reserved(budget), Usage{0, 100'000, 0, 0});  // $0.40 spent: a $0.20+ call no longer fits
  auto reached = budget.at_daily_cap();
  ASSERT_TRUE(reached);
  EXPECT_EQ(reached->cap, "daily_usd");
  EXPECT_NEAR(reached->spent, 0.4, 1e-12);
  clock_.set(budget_ist(2026, 11, 30, 23, 59, 59));
  EXPECT_TRUE(budget.at_daily_cap());
  clock_.set(budget_ist(2026, 12, 1, 0, 0, 0));
  EXPECT_FALSE(budget.at_daily_cap());
  EXPECT_EQ(budget.status().spent_usd, 0);
  EXPECT_EQ(budget.status().resets, "2026-12-02 00:00 India time");
}

TEST_F(BudgetKeeperTest, AddRaisesTodaysCapForTodayOnlyAndIsKeptAcrossARestart) {
  {
    BudgetKeeper budget = keeper(BudgetCaps{0.3, std::nullopt, std::nullopt});
    settle(budget, reserved(budget), Usage{0, 100'000, 0, 0});
    ASSERT_TRUE(budget.at_daily_cap());
    auto raised = budget.add_today(1.0);
    ASSERT_TRUE(raised.ok()) << raised.error().what;
    EXPECT_EQ(raised->added_usd, 1.0);
    EXPECT_FALSE(budget.at_daily_cap());
    EXPECT_NE(budget.describe().find("cap $1.30 ($1.00 added today)"), std::string::npos) << budget.describe();
    EXPECT_FALSE(budget.add_today(-1).ok());
  }
  // A restart the same day reads the raise back.
  BudgetKeeper restarted = keeper(BudgetCaps{0.3, std::nullopt, std::nullopt});
  ASSERT_TRUE(restarted.load().ok());
  EXPECT_EQ(restarted.status().added_usd, 1.0);
  // The next India day neither the running keeper nor a restarted one has it.
  clock_.set(budget_ist(2026, 12, 1, 0, 0, 1));
  EXPECT_EQ(restarted.status().added_usd, 0);
  BudgetKeeper next_day = keeper(BudgetCaps{0.3, std::nullopt, std::nullopt});
  ASSERT_TRUE(next_day.load().ok());
  EXPECT_EQ(next_day.status().added_usd, 0);
}

TEST_F(BudgetKeeperTest, AddIsRefusedWithoutADailyDollarCap) {
  BudgetKeeper budget = keeper(BudgetCaps{std::nullopt, 1000, std::nullopt});
  auto raised = budget.add_today(1.0);
  ASSERT_FALSE(raised.ok());
  EXPECT_NE(raised.error().what.find("no daily_usd cap"), std::string::npos);
}

TEST_F(BudgetKeeperTest, ADollarCapWithoutAPriceRefusesEveryCall) {
  UsageTracker unpriced(clock_, root_ / "other-usage.json", {}, "model-z");
  BudgetKeeper budget(clock_, unpriced, BudgetCaps{5.0, std::nullopt, std::nullopt}, kMaxTokens, root_ / "b.json");
  auto answer = budget.reserve(kInput);
  ASSERT_TRUE(std::holds_alternative<BudgetRefusal>(answer));
  EXPECT_NE(std::get<BudgetRefusal>(answer).sentence.find("no price"), std::string::npos);
}

TEST_F(BudgetKeeperTest, WithoutCapsEveryCallIsMadeAndStillCountedOnce) {
  BudgetKeeper budget = keeper(BudgetCaps{});
  settle(budget, reserved(budget, 1'000'000'000), Usage{5, 5, 0, 0});
  EXPECT_EQ(usage_->today().models.at("model-a").requests, 1u);
  EXPECT_EQ(budget.context_line(), "");
  EXPECT_EQ(budget.describe(), "");
}

}  // namespace
}  // namespace deskd::desk
