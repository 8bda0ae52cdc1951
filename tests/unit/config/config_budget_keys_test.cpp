// [budget] and [desk.budget]: the spend caps (daily_usd, daily_tokens, per_turn_usd), a
// desk's table laid over [budget] as [desk.model] is over [model]; a cap that is not a
// positive number, an unknown key, and a dollar cap on a model without a price are each
// named at file:line:column by `deskd check`.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runner/config/config.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using ::testing::AllOf;
using testing::ConfigTest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kAlpha;
using ::testing::StartsWith;

constexpr const char* kPricedModel = R"([model]
model = "m"
[model.prices."m"]
input = 1.0
output = 2.0
)";

TEST_F(ConfigTest, BudgetKeysAreReadAndADesksTableStartsFromBudget) {
  const Config config = valid(std::string(kPricedModel) + R"([budget]
daily_usd = 5
daily_tokens = 2000000
)" + kAlpha + R"([[desk]]
name = "beta"
directory = "desks/beta"
[desk.budget]
daily_usd = 2.5
per_turn_usd = 0.5
)");
  EXPECT_EQ(config.budget.daily_usd, 5.0);
  EXPECT_EQ(config.budget.daily_tokens, 2000000u);
  EXPECT_FALSE(config.budget.per_turn_usd);
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_EQ(config.desks[0].budget, config.budget) << "a desk without [desk.budget] takes [budget]";
  EXPECT_EQ(config.desks[1].budget.daily_usd, 2.5);
  EXPECT_EQ(config.desks[1].budget.daily_tokens, 2000000u) << "kept from [budget]";
  EXPECT_EQ(config.desks[1].budget.per_turn_usd, 0.5);
}

TEST_F(ConfigTest, WithoutBudgetTablesADeskHasNoCaps) {
  const Config config = valid(kAlpha);
  EXPECT_FALSE(config.desks[0].budget.any());
}

TEST_F(ConfigTest, BudgetValuesThatAreNotPositiveAndUnknownKeysAreNamedWhereWritten) {
  const ConfigLoad load = parse(std::string(kPricedModel) + R"([budget]
daily_usd = 0
daily_tokens = -5
per_turn_usd = "a dollar"
monthly_usd = 100
)" + kAlpha);
  EXPECT_THAT(problems(load), ElementsAre(AllOf(StartsWith("7:13: "), HasSubstr("daily_usd")),
                                          AllOf(StartsWith("8:16: "), HasSubstr("daily_tokens")),
                                          AllOf(StartsWith("9:16: "), HasSubstr("per_turn_usd")),
                                          AllOf(StartsWith("10:1: "), HasSubstr("monthly_usd"))));
}

TEST_F(ConfigTest, ADollarCapOnAModelWithoutAPriceIsRefusedAtTheCap) {
  // The script model has no name and no price: a dollar cap could not be held.
  const ConfigLoad load = parse(std::string(R"([budget]
daily_tokens = 100000
)") + kAlpha + R"([desk.budget]
per_turn_usd = 1
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
model = "unpriced"
[desk.budget]
daily_usd = 3
)");
  EXPECT_THAT(problems(load),
              ElementsAre(AllOf(StartsWith("7:16: 'per_turn_usd' of desk 'alpha' is a dollar cap, but its provider "
                                           "'script' has no price"),
                                HasSubstr("cap daily_tokens instead")),
                          AllOf(StartsWith("14:13: 'daily_usd' of desk 'beta' is a dollar cap, but its model "
                                           "'unpriced' has no price"),
                                HasSubstr("[model.prices.\"unpriced\"]"))));
}

TEST_F(ConfigTest, ADollarCapInBudgetIsRefusedForEachUnpricedDeskAndAcceptedForAPricedOne) {
  const ConfigLoad load = parse(std::string(R"([budget]
daily_usd = 5
)") + kAlpha + R"([[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
model = "m"
[desk.model.prices."m"]
input = 1.0
output = 2.0
)");
  EXPECT_THAT(problems(load), ElementsAre(StartsWith("2:13: 'daily_usd' of desk 'alpha' is a dollar cap")));
}

}  // namespace
}  // namespace deskd::app
