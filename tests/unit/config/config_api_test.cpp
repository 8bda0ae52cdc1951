// [[api]] tables (docs/API_GATE.md): the documented example read whole, each mistake at its
// line:column, key files hidden from every desk, and a naming desk's allowed_hosts extended.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "runner/config/config.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using testing::ConfigTest;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kAlpha;

// The example of docs/API_GATE.md, with the key file beside the config and the desks of the
// test's folder.
constexpr const char* kKiteExample = R"([[api]]
name = "kite"
origins = ["https://api.kite.trade"]

  [[api.credential]]
  variable = "KITE_API_KEY"
  key_file = "kite.key"
  header = "Authorization"
  template = "token {key}"

  [[api.add]]
  json = "algo_id"
  value = "NSE-ALGO-0042"
  methods = ["POST"]
  path = "/orders/**"

  [[api.rule]]
  name = "quotes"
  methods = ["GET"]
  path = "/quote/**"
  action = "allow"

  [[api.rule]]
  name = "orders"
  methods = ["POST"]
  path = "/orders/*"
  action = "allow"
  rate = "10/second"
  window = "nse_session"
  checks = ["quantity <= 100", "price * quantity <= 200000", 'exchange in ["NSE", "BSE"]']

[[desk]]
name = "alpha"
directory = "desks/alpha"
apis = ["kite"]
[desk.sandbox]
network = "allowlist"
allowed_hosts = ["example.com"]

[[desk]]
name = "beta"
directory = "desks/beta"
)";

class ApiConfigTest : public ConfigTest {
 protected:
  void SetUp() override {
    ConfigTest::SetUp();
    write("kite.key", "secret\n");
  }
};

policy::ApiSpec expected_kite(const std::filesystem::path& root) {
  policy::ApiSpec spec;
  spec.name = "kite";
  spec.origins = {policy::ApiOrigin{"https", "api.kite.trade", 443}};
  spec.credentials = {policy::ApiCredential{"KITE_API_KEY", root / "kite.key", policy::CredentialPlacement::header,
                                            "Authorization", "token {key}", false}};
  spec.added_fields = {
      policy::ApiAddedField{policy::ApiAddedField::Kind::json, "algo_id", "NSE-ALGO-0042", {"POST"}, "/orders/**"}};
  policy::ApiRule quotes;
  quotes.name = "quotes";
  quotes.methods = {"GET"};
  quotes.path = "/quote/**";
  quotes.action = policy::ApiAction::allow;
  policy::ApiRule orders;
  orders.name = "orders";
  orders.methods = {"POST"};
  orders.path = "/orders/*";
  orders.action = policy::ApiAction::allow;
  orders.rate = policy::ApiRate{10, policy::ApiRate::Per::second, "10/second"};
  orders.window =
      policy::ApiTimeWindow{.nse_session = true, .ranges = {}, .market_days_only = false, .text = "nse_session"};
  for (const char* text : {"quantity <= 100", "price * quantity <= 200000", R"(exchange in ["NSE", "BSE"])"}) {
    orders.checks.push_back(policy::parse_body_check(text).value());
  }
  spec.rules = {quotes, orders};
  return spec;
}

TEST_F(ApiConfigTest, TheDocumentedExampleIsReadWhole) {
  const Config config = valid(kKiteExample);
  ASSERT_EQ(config.apis.size(), 1u);
  EXPECT_EQ(config.apis[0], expected_kite(root_));
  EXPECT_EQ(config.apis[0].maximum_body_bytes, std::size_t{1} << 20);
  EXPECT_EQ(config.apis[0].approval_timeout, std::chrono::seconds(60));
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_EQ(config.desks[0].apis, config.apis);
  EXPECT_TRUE(config.desks[1].apis.empty());
}

TEST_F(ApiConfigTest, KeyFilesAreHiddenFromEveryDesk) {
  const Config config = valid(kKiteExample);
  for (const auto& desk : config.desks) {
    EXPECT_THAT(desk.hidden_paths, Contains(root_ / "kite.key")) << desk.name;
  }
}

TEST_F(ApiConfigTest, ANamingDeskReachesTheOrigins) {
  const Config config = valid(kKiteExample);
  EXPECT_THAT(config.desks[0].sandbox.allowed_hosts, ElementsAre("example.com", "api.kite.trade:443"));
  EXPECT_TRUE(config.desks[1].sandbox.allowed_hosts.empty());

  // An origin allowed already (any port) is not added twice; a wildcard is not enough.
  std::string text = kKiteExample;
  text.replace(text.find(R"(["example.com"])"), 15, R"(["API.kite.trade"])");
  EXPECT_THAT(valid(text).desks[0].sandbox.allowed_hosts, ElementsAre("API.kite.trade"));
  text.replace(text.find(R"(["API.kite.trade"])"), 18, R"(["*.kite.trade"])");
  EXPECT_THAT(valid(text).desks[0].sandbox.allowed_hosts, ElementsAre("*.kite.trade", "api.kite.trade:443"));
}

TEST_F(ApiConfigTest, OptionalKeysAreRead) {
  write("ca.pem", "-----BEGIN CERTIFICATE-----\n");
  write("user.key", "u");
  const Config config = valid(std::string(R"([[api]]
name = "vendor"
origins = ["http://127.0.0.1:8080", "https://data.example.com/"]
addresses = ["127.0.0.1", "::1"]
ca_file = "ca.pem"
max_body_kb = 64
approval_timeout_seconds = 300
  [[api.credential]]
  variable = "VENDOR_USER"
  key_file = "user.key"
  basic = "user"
  [[api.credential]]
  variable = "VENDOR_PASSWORD"
  key_file = "kite.key"
  basic = "password"
  in_body = true
  [[api.credential]]
  variable = "VENDOR_TOKEN"
  key_file = "kite.key"
  query = "token"
  [[api.add]]
  header = "X-Algo-Id"
  value = "A1"
  [[api.add]]
  form = "tag"
  value = "desk"
  [[api.rule]]
  methods = ["get", "Head"]
  action = "ask"
  window = ["09:00-12:00", "13:00-15:30"]
  market_days_only = true
  rate = "5/day"
)") + kAlpha);
  const policy::ApiSpec& spec = config.apis.at(0);
  EXPECT_EQ(spec.origins[0].text(), "http://127.0.0.1:8080");
  EXPECT_EQ(spec.origins[1].text(), "https://data.example.com");
  EXPECT_THAT(spec.addresses, ElementsAre("127.0.0.1", "::1"));
  EXPECT_EQ(spec.ca_file, root_ / "ca.pem");
  EXPECT_EQ(spec.maximum_body_bytes, 65536u);
  EXPECT_EQ(spec.approval_timeout, std::chrono::seconds(300));
  ASSERT_EQ(spec.credentials.size(), 3u);
  EXPECT_EQ(spec.credentials[0].placement, policy::CredentialPlacement::basic_user);
  EXPECT_EQ(spec.credentials[1].placement, policy::CredentialPlacement::basic_password);
  EXPECT_TRUE(spec.credentials[1].in_body);
  EXPECT_EQ(spec.credentials[2].placement, policy::CredentialPlacement::query);
  EXPECT_EQ(spec.credentials[2].name, "token");
  EXPECT_EQ(spec.added_fields[0].kind, policy::ApiAddedField::Kind::header);
  EXPECT_EQ(spec.added_fields[1].kind, policy::ApiAddedField::Kind::form);
  EXPECT_EQ(spec.added_fields[1].path, "/**");
  const policy::ApiRule& rule = spec.rules.at(0);
  EXPECT_EQ(rule.name, "rule 1");
  EXPECT_THAT(rule.methods, ElementsAre("GET", "HEAD"));
  EXPECT_EQ(rule.path, "/**");
  EXPECT_EQ(rule.action, policy::ApiAction::ask);
  ASSERT_TRUE(rule.window);
  EXPECT_EQ(rule.window->ranges, (std::vector<std::pair<int, int>>{{540, 720}, {780, 930}}));
  EXPECT_TRUE(rule.window->market_days_only);
  EXPECT_EQ(rule.window->text, "09:00-12:00, 13:00-15:30");
  EXPECT_EQ(rule.rate, (policy::ApiRate{5, policy::ApiRate::Per::day, "5/day"}));
  // Every key file is hidden, though no desk names the API.
  EXPECT_THAT(config.desks[0].hidden_paths, Contains(root_ / "user.key"));
}

}  // namespace
}  // namespace deskd::app
