// Prices for the names the APIs answer with: Anthropic's "claude-haiku-4-5-20251001" for
// a request of "claude-haiku-4-5", OpenAI's "gpt-4o-2024-08-06" for "gpt-4o" (the model
// field of their replies, as the SDKs' recorded streams show it); an exact name always
// wins; and a day of usage priced and described with them, including requests whose server
// reported no token counts.

#include "runner/desk/model_prices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runner/desk/usage_tracker.h"

namespace deskd::desk {
namespace {

using ::testing::HasSubstr;

TEST(ModelPricesTest, DateSuffixesOfBothApisComeOff) {
  EXPECT_EQ(undated_model_name("claude-haiku-4-5-20251001"), "claude-haiku-4-5");
  EXPECT_EQ(undated_model_name("claude-3-7-sonnet-20250219"), "claude-3-7-sonnet");
  EXPECT_EQ(undated_model_name("gpt-4o-2024-08-06"), "gpt-4o");
  EXPECT_EQ(undated_model_name("gpt-4.1-mini-2025-04-14"), "gpt-4.1-mini");
  EXPECT_EQ(undated_model_name("claude-sonnet-4-5@20250929"), "claude-sonnet-4-5");
  // Not dates: kept whole.
  for (const char* name : {"gpt-4o", "claude-sonnet-4-5", "llama3.1:8b", "model-12345678", "x-20251301", "x-2025-13-01",
                           "20251001", "-20251001", "o3-mini", ""}) {
    EXPECT_EQ(undated_model_name(name), name);
  }
}

const PriceTable kPrices = {
    {"claude-haiku-4-5", ModelPrice{1.0, 5.0, 0.1, 1.25}},
    {"gpt-4o", ModelPrice{2.5, 10.0, 1.25, 0}},
    {"gpt-4o-2024-05-13", ModelPrice{5.0, 15.0, 0, 0}},
    {"claude-3-7-sonnet-latest", ModelPrice{3.0, 15.0, 0.3, 3.75}},
    {"llama3.1", ModelPrice{0.1, 0.1, 0, 0}},
};

TEST(ModelPricesTest, ADatedNameFindsThePriceOfItsUndatedName) {
  auto haiku = find_price(kPrices, "claude-haiku-4-5-20251001");
  ASSERT_TRUE(haiku);
  EXPECT_EQ(haiku->priced_as, "claude-haiku-4-5");
  EXPECT_EQ(haiku->price.output_per_million, 5.0);
  auto gpt = find_price(kPrices, "gpt-4o-2024-08-06");
  ASSERT_TRUE(gpt);
  EXPECT_EQ(gpt->priced_as, "gpt-4o");
}

TEST(ModelPricesTest, AnExactNameAlwaysWins) {
  auto dated = find_price(kPrices, "gpt-4o-2024-05-13");
  ASSERT_TRUE(dated);
  EXPECT_EQ(dated->priced_as, "gpt-4o-2024-05-13");
  EXPECT_EQ(dated->price.input_per_million, 5.0);
  EXPECT_EQ(find_price(kPrices, "gpt-4o")->priced_as, "gpt-4o");
}

TEST(ModelPricesTest, TheDocumentedLatestAliasAndTheConfiguredName) {
  // "claude-3-7-sonnet-latest" is answered by "claude-3-7-sonnet-20250219".
  auto latest = find_price(kPrices, "claude-3-7-sonnet-20250219");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->priced_as, "claude-3-7-sonnet-latest");
  // Ollama answers "llama3.1" with "llama3.1:latest"; the desk asked for "llama3.1".
  EXPECT_FALSE(find_price(kPrices, "llama3.1:latest"));
  auto tagged = find_price(kPrices, "llama3.1:latest", "llama3.1");
  ASSERT_TRUE(tagged);
  EXPECT_EQ(tagged->priced_as, "llama3.1");
  // A configured name does not price another model the server answered with.
  EXPECT_FALSE(find_price(kPrices, "mistral-large-2411", "llama3.1"));
  EXPECT_FALSE(find_price(kPrices, "claude-opus-4-1-20250805", "claude-haiku-4-5"));
  EXPECT_FALSE(find_price(kPrices, "mystery"));
}

class PricedUsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "deskd-prices-XXXXXX").native();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
  ManualClock clock_{india_time_point(IndiaDate{std::chrono::year{2026} / 11 / 30}, 10, 0, 0)};
};

TEST_F(PricedUsageTest, TheReadmesExampleIsPricedWhenTheApiAnswersWithADatedName) {
  // README: model = "claude-sonnet-4-5" with [model.prices."claude-sonnet-4-5"]; the API
  // answers "claude-sonnet-4-5-20250929".
  UsageTracker usage(clock_, root_ / "usage.json", {{"claude-sonnet-4-5", ModelPrice{3.0, 15.0, 0.3, 3.75}}},
                     "claude-sonnet-4-5");
  ASSERT_TRUE(usage.record("claude-sonnet-4-5-20250929", Usage{1'000'000, 100'000, 0, 0}).ok());
  const DailyUsage today = usage.today();
  const ModelUsage& day = today.models.at("claude-sonnet-4-5-20250929");
  ASSERT_TRUE(day.cost_usd);
  EXPECT_DOUBLE_EQ(*day.cost_usd, 4.5);
  EXPECT_EQ(day.priced_as, "claude-sonnet-4-5");
  EXPECT_THAT(usage.describe(), HasSubstr("claude-sonnet-4-5-20250929: 1 request; tokens 1,000,000 in, 100,000 out; about $4.50 "
                                          "(priced as claude-sonnet-4-5)"));
}

TEST_F(PricedUsageTest, RequestsWithoutTokenCountsAreCountedAndSaidToBeUnknown) {
  UsageTracker usage(clock_, root_ / "usage.json", {{"gpt-4o", ModelPrice{2.5, 10.0, 1.25, 0}}});
  ASSERT_TRUE(usage.record("gpt-4o-2024-08-06", Usage{1'000'000, 0, 0, 0}).ok());
  ASSERT_TRUE(usage.record("gpt-4o-2024-08-06", std::nullopt).ok());
  ASSERT_TRUE(usage.record("llama3.1", std::nullopt).ok());
  const std::string text = usage.describe();
  EXPECT_THAT(text, HasSubstr("gpt-4o-2024-08-06: 2 requests; tokens 1,000,000 in, 0 out (and unknown for 1 request whose "
                              "server reported no token counts); about $2.50 or more (priced as gpt-4o)"));
  EXPECT_THAT(text, HasSubstr("llama3.1: 1 request; tokens unknown (the server reported no token counts); cost unknown"));
  EXPECT_THAT(text, HasSubstr("Total: 3 requests; about $2.50 plus an unknown cost for llama3.1"));

  // The count survives a restart; a file written before the count existed reads as none.
  UsageTracker reloaded(clock_, root_ / "usage.json", {});
  ASSERT_TRUE(reloaded.load().ok());
  EXPECT_EQ(reloaded.today().models.at("gpt-4o-2024-08-06").unreported_requests, 1u);
  EXPECT_EQ(reloaded.today().models.at("llama3.1").unreported_requests, 1u);
  std::ofstream(root_ / "usage.json")
      << R"({"version":1,"date":"2026-11-30","models":{"m":{"requests":2,"input_tokens":1,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":0}}})";
  ASSERT_TRUE(reloaded.load().ok());
  EXPECT_EQ(reloaded.today().models.at("m").unreported_requests, 0u);
  std::ofstream(root_ / "usage.json")
      << R"({"version":1,"date":"2026-11-30","models":{"m":{"requests":2,"input_tokens":1,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":0,"unreported_requests":3}}})";
  const Result<void> corrupt = reloaded.load();
  ASSERT_FALSE(corrupt.ok());
  EXPECT_THAT(corrupt.error().what, HasSubstr("\"unreported_requests\""));
}

}  // namespace
}  // namespace deskd::desk
