// An API's rule book deciding requests (policy/api_rules.h): first match, default deny, the
// refusal sentences of windows, body checks and rates, with injected moments.

#include "policy/api_rules.h"

#include <gtest/gtest.h>

#include <string>

namespace deskd::policy {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kForm = "application/x-www-form-urlencoded";

// A Wednesday at `minute` India time, a trading day; `offset` moves the instant.
ApiMoment moment_at(int minute, std::chrono::system_clock::duration offset = {}, bool trading_day = true,
                    std::int64_t india_day = 20000) {
  return ApiMoment{std::chrono::system_clock::time_point(std::chrono::hours(24) * india_day) + offset, minute,
                   trading_day, india_day};
}
const ApiMoment kMidSession = moment_at(11 * 60);

ApiRule rule(std::string name, std::vector<std::string> methods, std::string path, ApiAction action) {
  ApiRule made;
  made.name = std::move(name);
  made.methods = std::move(methods);
  made.path = std::move(path);
  made.action = action;
  return made;
}

BodyCheck check(std::string_view text) { return parse_body_check(text).value(); }

class ApiRuleBookTest : public ::testing::Test {
 protected:
  ApiRuleBookTest() {
    spec_.rules.push_back(rule("quotes", {"GET"}, "/quote/**", ApiAction::allow));
    spec_.rules.push_back(rule("admin", {}, "/admin/**", ApiAction::deny));
    ApiRule orders = rule("orders", {"POST"}, "/orders/*", ApiAction::allow);
    orders.checks = {check("quantity <= 100"), check("quantity >= 1"), check("price * quantity <= 200000"),
                     check(R"(exchange in ["NSE","BSE"])"), check(R"(product == "CNC")")};
    spec_.rules.push_back(std::move(orders));
    spec_.rules.push_back(rule("modify", {"PUT"}, "/orders/*", ApiAction::ask));
  }

  ApiDecision decide(std::string_view method, std::string_view path, std::string_view type = {},
                     std::string_view body = {}, const ApiMoment& moment = kMidSession) {
    return book_.decide(ApiRequestView{method, path, type, body}, moment);
  }
  std::string why_order(std::string_view body, std::string_view type = kJson) {
    return decide("POST", "/orders/regular", type, body).why;
  }

  ApiSpec spec_;
  ApiRuleBook book_{spec_};
};

TEST_F(ApiRuleBookTest, FirstMatchDecidesAndNoMatchIsDenied) {
  auto quote = decide("GET", "/quote/ltp");
  EXPECT_EQ(quote.action, ApiAction::allow);
  ASSERT_NE(quote.rule, nullptr);
  EXPECT_EQ(quote.rule->name, "quotes");
  EXPECT_EQ(quote.why, "");

  auto post_quote = decide("POST", "/quote/ltp");
  EXPECT_EQ(post_quote.action, ApiAction::deny);
  EXPECT_EQ(post_quote.rule, nullptr);
  EXPECT_EQ(post_quote.why, "no rule allows POST /quote/ltp");

  auto admin = decide("get", "/admin/users");
  EXPECT_EQ(admin.action, ApiAction::deny);
  EXPECT_EQ(admin.rule->name, "admin");
  EXPECT_EQ(admin.why, "rule admin denies GET /admin/users");

  EXPECT_EQ(decide("PUT", "/orders/1").action, ApiAction::ask);
  EXPECT_EQ(decide("GET", "/quote/../admin/users").why, "no rule allows GET /quote/../admin/users");
  EXPECT_EQ(decide("DELETE", "/%61dmin/x").why, "rule admin denies DELETE /%61dmin/x");
}

TEST_F(ApiRuleBookTest, BodyChecksPassAndRefuseInShortSentences) {
  const std::string good = R"({"quantity":10,"price":1500.5,"exchange":"NSE","product":"CNC"})";
  EXPECT_EQ(decide("POST", "/orders/regular", kJson, good).action, ApiAction::allow);
  EXPECT_EQ(why_order(R"({"quantity":500,"price":1,"exchange":"NSE","product":"CNC"})"), "quantity is 500, above 100");
  EXPECT_EQ(why_order(R"({"quantity":0,"price":1,"exchange":"NSE","product":"CNC"})"), "quantity is 0, below 1");
  EXPECT_EQ(why_order(R"({"quantity":100,"price":2500,"exchange":"NSE","product":"CNC"})"),
            "price * quantity is 250000, above 200000");
  EXPECT_EQ(why_order(R"({"quantity":1,"price":1,"exchange":"MCX","product":"CNC"})"),
            R"(exchange is "MCX", not in ["NSE","BSE"])");
  EXPECT_EQ(why_order(R"({"quantity":1,"price":1,"exchange":"NSE","product":"MIS"})"),
            R"(product is "MIS", not "CNC")");
  EXPECT_EQ(why_order(R"({"price":1,"exchange":"NSE","product":"CNC"})"), "quantity is missing");
  EXPECT_EQ(why_order(R"({"quantity":1,"exchange":"NSE","product":"CNC"})"), "price is missing");
  EXPECT_EQ(why_order(R"({"quantity":true,"price":1})"), "quantity is true, not a number");
  EXPECT_EQ(why_order(R"({"quantity":"ten","price":1})"), R"(quantity is "ten", not a number)");
  EXPECT_EQ(why_order(R"({"quantity":"500","price":1})"), "quantity is 500, above 100");
  EXPECT_EQ(why_order(R"({"quantity":1,"price":1,"exchange":5,"product":"CNC"})"),
            "exchange is 5, not in [\"NSE\",\"BSE\"]");
  EXPECT_EQ(why_order(R"({"quantity":1,"price":1,"exchange":"NSE","product":7})"), R"(product is 7, not "CNC")");
}

TEST_F(ApiRuleBookTest, BodiesTheChecksCannotRead) {
  EXPECT_EQ(why_order("quantity=5", "text/plain"),
            "the body is not JSON or a form, so rule orders's checks cannot be made");
  EXPECT_EQ(why_order("quantity=5", ""), "the body is not JSON or a form, so rule orders's checks cannot be made");
  EXPECT_EQ(why_order("{", kJson), "the body is not valid JSON, so rule orders's checks cannot be made");
  EXPECT_EQ(why_order("", kJson), "the body is not valid JSON, so rule orders's checks cannot be made");
  EXPECT_EQ(why_order(R"({"quantity":1,"quantity":900})", kJson),
            "the body's JSON has the key \"quantity\" twice, so rule orders's checks cannot be made");
  EXPECT_EQ(why_order("quantity=%zz", kForm), "the body is not a valid form, so rule orders's checks cannot be made");
  EXPECT_EQ(why_order("[1,2]", kJson), "quantity is missing");
}

TEST_F(ApiRuleBookTest, FormBodiesCompareAsNumbersOrStrings) {
  EXPECT_EQ(decide("POST", "/orders/regular", "application/x-www-form-urlencoded; charset=UTF-8",
                   "quantity=10&price=1500.5&exchange=BSE&product=CNC")
                .action,
            ApiAction::allow);
  EXPECT_EQ(why_order("quantity=500&price=1&exchange=NSE&product=CNC", kForm), "quantity is 500, above 100");
  EXPECT_EQ(why_order("quantity=10x&price=1", kForm), R"(quantity is "10x", not a number)");
  EXPECT_EQ(why_order("quantity=+10&price=1", kForm), R"(quantity is " 10", not a number)");
  EXPECT_EQ(why_order("quantity=inf&price=1", kForm), R"(quantity is "inf", not a number)");
  EXPECT_EQ(why_order("quantity=1&quantity=900&price=1", kForm),
            "quantity is given 2 times; a checked field must be given once");
  EXPECT_EQ(why_order("quantity=1&price=1&exchange=nse&product=CNC", kForm),
            R"(exchange is "nse", not in ["NSE","BSE"])");
}

TEST(ApiRuleChecks, NestedFieldsEqualNumbersAndNumericLists) {
  ApiSpec spec;
  ApiRule nested = rule("nested", {}, "/**", ApiAction::allow);
  nested.checks = {check("order.legs.0.qty == 5"), check("order.lot in [1, 25, 50]")};
  spec.rules.push_back(std::move(nested));
  ApiRuleBook book(spec);
  const auto why = [&](std::string_view body) {
    return book.decide(ApiRequestView{"POST", "/x", kJson, body}, kMidSession).why;
  };
  EXPECT_EQ(why(R"({"order":{"legs":[{"qty":5.0}],"lot":25}})"), "");
  EXPECT_EQ(why(R"({"order":{"legs":[{"qty":6}],"lot":25}})"), "order.legs.0.qty is 6, not 5");
  EXPECT_EQ(why(R"({"order":{"legs":[],"lot":25}})"), "order.legs.0.qty is missing");
  EXPECT_EQ(why(R"({"order":{"legs":[{"qty":"5"}],"lot":"50"}})"), "");
  EXPECT_EQ(why(R"({"order":{"legs":[{"qty":5}],"lot":30}})"), "order.lot is 30, not in [1,25,50]");
}

TEST(ApiRuleWindow, NseSessionBounds) {
  ApiSpec spec;
  ApiRule orders = rule("orders", {}, "/**", ApiAction::allow);
  orders.window = ApiTimeWindow{.nse_session = true, .ranges = {}, .market_days_only = false, .text = "nse_session"};
  spec.rules.push_back(std::move(orders));
  ApiRuleBook book(spec);
  const auto why = [&](const ApiMoment& moment) {
    return book.decide(ApiRequestView{"GET", "/x", {}, {}}, moment).why;
  };
  EXPECT_EQ(why(moment_at(9 * 60 + 14)), "outside nse_session");
  EXPECT_EQ(why(moment_at(9 * 60 + 15)), "");
  EXPECT_EQ(why(moment_at(15 * 60 + 29)), "");
  EXPECT_EQ(why(moment_at(15 * 60 + 30)), "outside nse_session");
  EXPECT_EQ(why(moment_at(11 * 60, {}, /*trading_day=*/false)), "outside nse_session");  // a Saturday
}

TEST(ApiRuleWindow, ExplicitRangesOnAnyDayOrMarketDaysOnly) {
  ApiSpec spec;
  ApiRule any_day = rule("any", {"GET"}, "/**", ApiAction::allow);
  any_day.window = ApiTimeWindow{.nse_session = false,
                                 .ranges = {{9 * 60, 10 * 60}, {14 * 60, 15 * 60}},
                                 .market_days_only = false,
                                 .text = "09:00-10:00, 14:00-15:00"};
  ApiRule market_days = rule("market", {"POST"}, "/**", ApiAction::allow);
  market_days.window = ApiTimeWindow{
      .nse_session = false, .ranges = {{9 * 60, 10 * 60}}, .market_days_only = true, .text = "09:00-10:00"};
  spec.rules = {any_day, market_days};
  ApiRuleBook book(spec);
  const auto why = [&](std::string_view method, const ApiMoment& moment) {
    return book.decide(ApiRequestView{method, "/x", {}, {}}, moment).why;
  };
  EXPECT_EQ(why("GET", moment_at(9 * 60)), "");
  EXPECT_EQ(why("GET", moment_at(10 * 60)), "outside 09:00-10:00, 14:00-15:00");
  EXPECT_EQ(why("GET", moment_at(14 * 60 + 59, {}, false)), "");
  EXPECT_EQ(why("POST", moment_at(9 * 60 + 30)), "");
  EXPECT_EQ(why("POST", moment_at(9 * 60 + 30, {}, false)), "outside 09:00-10:00");
}

ApiSpec rated(std::uint32_t count, ApiRate::Per per, std::string text) {
  ApiSpec spec;
  ApiRule orders = rule("orders", {}, "/orders/*", ApiAction::allow);
  orders.rate = ApiRate{count, per, std::move(text)};
  orders.checks = {check("quantity <= 100")};
  spec.rules.push_back(std::move(orders));
  return spec;
}

TEST(ApiRuleRate, TheEleventhInASecondIsRefusedAndAnHourLaterPasses) {
  const ApiSpec spec = rated(10, ApiRate::Per::second, "10/second");
  ApiRuleBook book(spec);
  const auto decide = [&](const ApiMoment& moment, std::string_view body = R"({"quantity":1})") {
    return book.decide(ApiRequestView{"POST", "/orders/regular", kJson, body}, moment);
  };
  for (int index = 0; index < 10; ++index) {
    EXPECT_EQ(decide(moment_at(600, index * 50ms)).action, ApiAction::allow) << index;
  }
  EXPECT_EQ(decide(moment_at(600, 900ms)).why, "over 10/second");
  // A refusal does not count: the window slides from the first request's moment.
  EXPECT_EQ(decide(moment_at(600, 999ms)).why, "over 10/second");
  EXPECT_EQ(decide(moment_at(600, 1000ms)).action, ApiAction::allow);
  EXPECT_EQ(decide(moment_at(600, 1001ms)).why, "over 10/second");
  EXPECT_EQ(decide(moment_at(660, 1h)).action, ApiAction::allow);
}

TEST(ApiRuleRate, RequestsRefusedByChecksDoNotCount) {
  const ApiSpec spec = rated(2, ApiRate::Per::minute, "2/minute");
  ApiRuleBook book(spec);
  const auto decide = [&](std::chrono::seconds offset, std::string_view body) {
    return book.decide(ApiRequestView{"POST", "/orders/1", kJson, body}, moment_at(600, offset));
  };
  EXPECT_EQ(decide(0s, R"({"quantity":1000})").why, "quantity is 1000, above 100");
  EXPECT_EQ(decide(1s, R"({"quantity":1000})").why, "quantity is 1000, above 100");
  EXPECT_EQ(decide(2s, R"({"quantity":1})").why, "");
  EXPECT_EQ(decide(3s, R"({"quantity":1})").why, "");
  EXPECT_EQ(decide(30s, R"({"quantity":1})").why, "over 2/minute");
  EXPECT_EQ(decide(62s, R"({"quantity":1})").why, "");
}

TEST(ApiRuleRate, PerDayResetsOnANewIndiaDay) {
  const ApiSpec spec = rated(3, ApiRate::Per::day, "3/day");
  ApiRuleBook book(spec);
  const auto decide = [&](std::int64_t day, int minute) {
    return book.decide(ApiRequestView{"POST", "/orders/1", kJson, R"({"quantity":1})"},
                       moment_at(minute, std::chrono::minutes(minute), true, day));
  };
  EXPECT_EQ(decide(20000, 600).why, "");
  EXPECT_EQ(decide(20000, 601).why, "");
  EXPECT_EQ(decide(20000, 602).why, "");
  EXPECT_EQ(decide(20000, 1439).why, "over 3/day");
  EXPECT_EQ(decide(20001, 0).why, "");
}

TEST(ApiRuleAction, NamesEachAction) {
  EXPECT_EQ(api_action_name(ApiAction::allow), "allow");
  EXPECT_EQ(api_action_name(ApiAction::deny), "deny");
  EXPECT_EQ(api_action_name(ApiAction::ask), "ask");
}

}  // namespace
}  // namespace deskd::policy
