// The provider table: its names and their order (the config's error lists them so), which
// provider needs a key where, and that every row builds its provider.

#include "runner/model/providers.h"

#include <boost/asio/io_context.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace deskd::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ProvidersTest, TheNamesAreTheTablesInItsOrder) {
  EXPECT_THAT(std::vector<std::string_view>(provider_names().begin(), provider_names().end()),
              ElementsAre("script", "anthropic", "openai"));
  EXPECT_EQ(provider_names_text(), "script, anthropic and openai");
  ASSERT_NE(find_provider_kind("anthropic"), nullptr);
  EXPECT_EQ(find_provider_kind("anthropic")->name, "anthropic");
  EXPECT_EQ(find_provider_kind("gemini"), nullptr);
  EXPECT_EQ(find_provider_kind(""), nullptr);
}

TEST(ProvidersTest, OnlyTheHttpProvidersNeedAKeyAndALocalOpenAiServerNone) {
  const ProviderKind& script = *find_provider_kind("script");
  const ProviderKind& anthropic = *find_provider_kind("anthropic");
  const ProviderKind& openai = *find_provider_kind("openai");
  EXPECT_FALSE(needs_api_key(script, ""));
  EXPECT_TRUE(needs_api_key(anthropic, ""));
  EXPECT_TRUE(needs_api_key(anthropic, "http://127.0.0.1:8080"));
  EXPECT_TRUE(needs_api_key(openai, ""));
  EXPECT_TRUE(needs_api_key(openai, "https://api.openai.com/v1"));
  EXPECT_TRUE(needs_api_key(openai, "https://127.0.0.1:11434/v1"));
  EXPECT_TRUE(needs_api_key(openai, "http://localhost.example/v1"));
  EXPECT_FALSE(needs_api_key(openai, "http://127.0.0.1:11434/v1"));
  EXPECT_FALSE(needs_api_key(openai, "http://localhost:11434/v1"));
  EXPECT_FALSE(script.needs_model);
  EXPECT_TRUE(anthropic.needs_model && openai.needs_model);
  EXPECT_TRUE(anthropic.extended_thinking);
  EXPECT_FALSE(script.extended_thinking || openai.extended_thinking);
}

TEST(ProvidersTest, EveryRowBuildsItsProvider) {
  boost::asio::io_context io;
  for (const ProviderKind& kind : provider_kinds()) {
    ASSERT_NE(kind.make, nullptr) << kind.name;
    ProviderSettings settings;
    settings.model = "some-model";
    settings.api_key = "key";
    auto made = kind.make(io.get_executor(), settings);
    ASSERT_TRUE(made.ok()) << kind.name << ": " << made.error().what;
    EXPECT_THAT((*made)->describe(), ::testing::StartsWith(std::string(kind.name))) << kind.name;
  }
}

TEST(ProvidersTest, TheScriptRowRefusesAScriptItCannotRead) {
  boost::asio::io_context io;
  ProviderSettings settings;
  settings.script = "/nonexistent/deskd-replies.jsonl";
  auto made = find_provider_kind("script")->make(io.get_executor(), settings);
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(made.error().what, HasSubstr("/nonexistent/deskd-replies.jsonl"));
}

}  // namespace
}  // namespace deskd::model
