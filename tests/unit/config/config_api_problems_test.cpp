// [[api]] tables when they are wrong: every mistake at the line:column of the value that
// holds it, and `deskd check`'s loader reporting them.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "runner/config/config.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using testing::ConfigTest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ApiProblemsTest : public ConfigTest {
 protected:
  void SetUp() override {
    ConfigTest::SetUp();
    write("kite.key", "secret\n");
    std::filesystem::create_directories(root_ / "keys");
  }
};

TEST_F(ApiProblemsTest, EachMistakeOfAnApiIsAtItsValue) {
  EXPECT_THAT(
      problems(parse(R"([[api]]
name = "kite"
origins = ["ftp://x", "https://*.kite.trade", "https://api.kite.trade/v3"]
addresses = ["localhost"]
max_body_kb = 0
approval_timeout_seconds = 3601
colour = "blue"
  [[api.credential]]
  variable = "PATH"
  key_file = "missing.key"
  header = "Authorization"
  query = "api_key"
  template = "token"
  [[api.credential]]
  variable = "1KEY"
  key_file = "keys"
  [[api.credential]]
  key_file = "kite.key"
  basic = "admin"
  [[api.add]]
  value = "x"
  [[api.add]]
  header = "X-Algo"
  json = "algo_id"
  [[api.rule]]
  path = "orders"
  action = "permit"
  rate = "0/second"
  window = "after_lunch"
  market_days_only = true
  checks = ["quantity <= 100", "quantity < 5"]
  [[api.rule]]
  action = "allow"
  rate = "1000001/minute"
  window = ["15:30-09:15", "9-10"]
  [[api.rule]]
  methods = ["G ET"]
[[api]]
name = "kite"
[[desk]]
name = "alpha"
directory = "desks/alpha"
)")),
      ElementsAre(
          "3:12: 'ftp://x' is not an API origin: it must start with https:// or http://",
          "3:23: 'https://*.kite.trade' is not an API origin: a wildcard host is not an origin; name each host "
          "the API is served from",
          "3:47: 'https://api.kite.trade/v3' is not an API origin: an origin has no path, query or fragment; "
          "write the path in a rule",
          "4:14: 'addresses' must hold IP addresses such as \"127.0.0.1\", not 'localhost'",
          "5:15: 'max_body_kb' must be at least 1", "6:28: 'approval_timeout_seconds' must be at most 3600",
          "7:1: unknown key 'colour' in [[api]]",
          "9:14: 'variable' 'PATH' is one the sandbox sets itself (PATH, HOME, LANG, TERM, TZ, the CA bundle "
          "variables, LD_*, *_PROXY); choose a name of the API's own, such as KITE_API_KEY",
          "10:14: the key file " + root_.native() + "/missing.key does not exist",
          "12:11: [[api.credential]] needs exactly one of 'header', 'query' or 'basic', not 2",
          "13:14: 'template' is the value of a header credential; this credential has no 'header'",
          "14:3: [[api.credential]] needs exactly one of 'header', 'query' or 'basic'",
          "15:14: 'variable' must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), not '1KEY'",
          "16:14: the key file " + root_.native() + "/keys is not a regular file",
          "17:3: [[api.credential]] needs a 'variable'", "19:11: 'basic' must be one of user, password, not 'admin'",
          "20:3: [[api.add]] needs exactly one of 'header', 'json' or 'form'", "22:3: [[api.add]] needs a 'value'",
          "24:10: [[api.add]] needs exactly one of 'header', 'json' or 'form', not 2",
          "26:10: the path pattern 'orders' must start with '/'",
          "27:12: 'action' must be one of allow, deny, ask, not 'permit'",
          "28:10: 'rate' must be N/second, N/minute or N/day with N from 1 to 1000000, not '0/second'",
          "29:12: 'window' must be \"nse_session\" or a list of India-time ranges such as [\"09:00-15:30\"], "
          "each start before its end, not 'after_lunch'",
          "31:32: the check 'quantity < 5' needs one of <=, >=, == or in after the field",
          "34:10: 'rate' must be N/second, N/minute or N/day with N from 1 to 1000000, not '1000001/minute'",
          "35:13: 'window' must be \"nse_session\" or a list of India-time ranges such as [\"09:00-15:30\"], "
          "each start before its end, not '15:30-09:15'",
          "35:28: 'window' must be \"nse_session\" or a list of India-time ranges such as [\"09:00-15:30\"], "
          "each start before its end, not '9-10'",
          "36:3: [[api.rule]] needs an 'action': allow, deny or ask",
          "37:14: 'methods' must hold HTTP methods such as \"GET\", not 'G ET'",
          "38:1: [[api]] 'kite' needs at least one [[api.rule]]: with none, every request is denied",
          "38:1: [[api]] needs 'origins', the scheme://host[:port] it covers",
          "39:8: API name 'kite' is used twice; the first is at line 2"));
}

TEST_F(ApiProblemsTest, CredentialsRulesAndBasicAuthAreCheckedTogether) {
  EXPECT_THAT(
      problems(parse(R"([[api]]
name = "vendor"
origins = ["https://data.example.com"]
rule = []
  [[api.credential]]
  variable = "VENDOR_USER"
  key_file = "kite.key"
  basic = "user"
  [[api.credential]]
  variable = "VENDOR_USER"
  key_file = "kite.key"
  header = "X-Key"
  template = "Bearer"
  [[api.credential]]
  variable = "HTTPS_PROXY"
  key_file = "kite.key"
  header = "Bad Header"
[[api]]
name = "other"
origins = ["https://other.example.com"]
  [[api.rule]]
  action = "deny"
  rate = "5/second"
  [[api.rule]]
  action = "allow"
  market_days_only = true
  [[api.rule]]
  action = "allow"
  window = "nse_session"
  market_days_only = false
  [[api.rule]]
  action = "allow"
  checks = ["price * quantity == \"x\""]
[[desk]]
name = "alpha"
directory = "desks/alpha"
)")),
      ElementsAre("1:1: API 'vendor' has a basic 'user' credential but no 'password'; basic auth needs both, "
                  "each from a [[api.credential]] of the same API",
                  "1:1: [[api]] 'vendor' needs at least one [[api.rule]]: with none, every request is denied",
                  "10:14: the variable 'VENDOR_USER' holds another credential of API 'vendor' already; each "
                  "credential needs a variable of its own",
                  "13:14: 'template' must hold {key}, where the key goes, not 'Bearer'",
                  "15:14: 'variable' 'HTTPS_PROXY' is one the sandbox sets itself (PATH, HOME, LANG, TERM, TZ, "
                  "the CA bundle variables, LD_*, *_PROXY); choose a name of the API's own, such as KITE_API_KEY",
                  "17:12: 'header' must be an HTTP header name, not 'Bad Header'",
                  "22:12: a rule whose action is \"deny\" refuses every request it matches; its 'rate', 'window' "
                  "and 'checks' would never be looked at, so remove them or make the action \"allow\" or \"ask\"",
                  "26:22: 'market_days_only' holds explicit 'window' ranges to NSE trading days; this rule has "
                  "no 'window'",
                  "30:22: 'market_days_only' holds explicit 'window' ranges to NSE trading days; this rule has "
                  "window = \"nse_session\", which keeps to trading days already",
                  "33:13: the check 'price * quantity == \"x\"' compares a product, which needs a number, not "
                  "'\"x\"'"));
}

TEST_F(ApiProblemsTest, WhatADeskNamesIsChecked) {
  write("other.key", "o");
  EXPECT_THAT(
      problems(parse(R"([[api]]
name = "kite"
origins = ["https://api.kite.trade"]
  [[api.credential]]
  variable = "KITE_API_KEY"
  key_file = "kite.key"
  header = "Authorization"
  [[api.rule]]
  action = "allow"
[[api]]
name = "mirror"
origins = ["https://API.kite.trade:443"]
  [[api.credential]]
  variable = "KITE_API_KEY"
  key_file = "other.key"
  query = "key"
  [[api.rule]]
  action = "allow"
[[desk]]
name = "alpha"
directory = "desks/alpha"
apis = ["kite", "kyte", "mirror", "kite"]
[desk.sandbox]
network = "allowlist"
environment = ["KITE_API_KEY"]
[[desk]]
name = "beta"
directory = "desks/beta"
apis = ["kite"]
)")),
      ElementsAre("14:14: the variable 'KITE_API_KEY' holds a placeholder of API 'kite' and of API 'mirror', "
                  "both named by desk 'alpha'; each credential of a desk needs a variable of its own",
                  "22:8: desk 'alpha' passes 'KITE_API_KEY' into its sandbox ('environment'), the variable that "
                  "holds API 'kite''s placeholder; remove it from 'environment'",
                  "22:8: desk 'alpha' passes 'KITE_API_KEY' into its sandbox ('environment'), the variable that "
                  "holds API 'mirror''s placeholder; remove it from 'environment'",
                  "22:17: 'apis' names 'kyte', but no [[api]] of this config is called that; the APIs are kite, "
                  "mirror",
                  "22:25: desk 'alpha' names APIs 'kite' and 'mirror', which both cover https://api.kite.trade; "
                  "the gate could not tell whose rules and keys a request there takes",
                  "29:8: desk 'beta' names APIs in 'apis', which it reaches only through deskd's egress proxy; "
                  "write network = \"allowlist\" in its [desk.sandbox] (its network is \"none\")"));
}

// `deskd check` prints what load_config finds: a bad [[api]] in a file on disk reaches it.
TEST_F(ApiProblemsTest, TheCheckCommandsLoaderReportsABadApi) {
  std::ofstream(file()) << "[runner]\nstate_folder = \"state\"\n[[api]]\nname = \"kite\"\norigins = [\"ftp://x\"]\n"
                           "  [[api.rule]]\n  action = \"allow\"\n"
                        << testing::kAlpha;
  const ConfigLoad load = load_config(file());
  EXPECT_FALSE(load.config);
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_EQ(load.problems[0].to_string(),
            file().native() + ":5:12: 'ftp://x' is not an API origin: it must start with https:// or http://");
}

}  // namespace
}  // namespace deskd::app
