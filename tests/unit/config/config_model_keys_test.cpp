// The [model] keys for the live APIs' ways: extended thinking (thinking = { budget_tokens })
// with the Messages API's rules (at least 1024, below max_tokens, anthropic only, no
// temperature), the name OpenAI's limit is sent under, going on after a max_tokens cut, and
// OpenAI's Responses API (api = "responses", openai only; encrypted_reasoning); each problem
// named at file:line:column by `deskd check`.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runner/config/config.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using testing::ConfigTest;
using ::testing::ElementsAre;
using testing::kAlpha;
using ::testing::MatchesRegex;

TEST_F(ConfigTest, ThinkingTheTokenFieldAndContinuingAreRead) {
  const Config config = valid(std::string(R"([model]
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_variable = "ANTHROPIC_API_KEY"
max_tokens = 16000
thinking = { budget_tokens = 10000 }
continue_after_max_tokens = true
)") + kAlpha + R"([desk.model]
provider = "openai"
model = "llama3.1"
base_url = "http://127.0.0.1:11434/v1"
max_tokens_field = "max_tokens"
thinking = false
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
thinking = { budget_tokens = 4096 }
)");
  EXPECT_EQ(config.model.thinking_budget_tokens, 10000u);
  EXPECT_TRUE(config.model.continue_after_max_tokens);
  EXPECT_EQ(config.model.max_tokens_field, "max_completion_tokens") << "the default";
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_FALSE(config.desks[0].model.thinking_budget_tokens) << "thinking = false turns it off";
  EXPECT_EQ(config.desks[0].model.max_tokens_field, "max_tokens");
  EXPECT_EQ(config.desks[1].model.thinking_budget_tokens, 4096u);
  EXPECT_EQ(config.desks[1].model.provider, "anthropic");
}

TEST_F(ConfigTest, ThinkingOfAnOpenAiDeskIsRefused) {
  const ConfigLoad load = parse(std::string(R"([model]
provider = "openai"
model = "gpt-5"
api_key_variable = "OPENAI_API_KEY"
thinking = { budget_tokens = 2048 }
)") + kAlpha);
  EXPECT_THAT(problems(load),
              ElementsAre(MatchesRegex("1:1: 'thinking' is extended thinking of provider 'anthropic'; provider "
                                       "'openai' has none \\(thinking = false turns it off\\)")));
}

TEST_F(ConfigTest, ThinkingOutsideTheApisRulesIsNamedWhereItIsWritten) {
  const ConfigLoad load = parse(std::string(R"([model]
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_variable = "ANTHROPIC_API_KEY"
max_tokens_field = "max_output_tokens"
continue_after_max_tokens = "yes"
thinking = { budget_tokens = 1000, display = "omitted" }
)") + kAlpha + R"([desk.model]
thinking = { }
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
max_tokens = 4096
temperature = 0.5
thinking = { budget_tokens = 4096 }
)");
  EXPECT_THAT(
      problems(load),
      ElementsAre(MatchesRegex("5:20: 'max_tokens_field' must be one of max_completion_tokens, max_tokens, not "
                               "'max_output_tokens'"),
                  MatchesRegex("6:29: 'continue_after_max_tokens' must be true or false"),
                  MatchesRegex("7:30: 'budget_tokens' must be at least 1024"),
                  MatchesRegex("7:36: unknown key 'display' in \\[model.thinking\\]"),
                  MatchesRegex("12:12: 'thinking' needs a 'budget_tokens' .*"),
                  MatchesRegex("16:1: 'temperature' cannot be set together with 'thinking'.*"),
                  MatchesRegex("16:1: 'thinking' budget_tokens \\(4096\\) must be below max_tokens \\(4096\\): .*")));
}

TEST_F(ConfigTest, TheResponsesApiIsRead) {
  const Config config = valid(std::string(R"([model]
provider = "openai"
model = "o3-pro"
api_key_variable = "OPENAI_API_KEY"
api = "responses"
)") + kAlpha + R"([desk.model]
model = "gpt-4.1"
encrypted_reasoning = false
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
api = "chat_completions"
)");
  EXPECT_EQ(config.model.api, "responses");
  EXPECT_TRUE(config.model.encrypted_reasoning) << "the default";
  ASSERT_EQ(config.desks.size(), 2u);
  EXPECT_EQ(config.desks[0].model.api, "responses");
  EXPECT_FALSE(config.desks[0].model.encrypted_reasoning);
  EXPECT_EQ(config.desks[1].model.api, "chat_completions");
}

TEST_F(ConfigTest, TheResponsesApiOfAnotherProviderIsNamedWhereItIsWritten) {
  const ConfigLoad load = parse(std::string(R"([model]
provider = "openai"
model = "gpt-5-pro"
api_key_variable = "OPENAI_API_KEY"
api = "responses"
[[desk]]
name = "alpha"
directory = "desks/alpha"
[desk.model]
provider = "anthropic"
api = "completions"
[[desk]]
name = "beta"
directory = "desks/beta"
[desk.model]
provider = "anthropic"
api = "responses"
)"));
  EXPECT_THAT(problems(load),
              ElementsAre(MatchesRegex("9:1: 'api = \"responses\"' \\(OpenAI's Responses API\\) was laid over "
                                       "provider 'anthropic', which has one API; write api = \"chat_completions\""),
                          MatchesRegex("11:7: 'api' must be one of chat_completions, responses, not 'completions'"),
                          MatchesRegex("17:7: 'api = \"responses\"' is OpenAI's Responses API, spoken by provider "
                                       "'openai'; provider 'anthropic' has one API")));
}

}  // namespace
}  // namespace deskd::app
