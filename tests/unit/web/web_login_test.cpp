// The web login's parts (runner/web/web_login.h): the token file, one-time login codes and
// sessions, with an injected clock.

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/clock.h"
#include "runner/web/web_login.h"

namespace deskd::web {
namespace {

namespace fs = std::filesystem;

class WebLoginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-web-login-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    folder_ = pattern;
  }
  void TearDown() override { fs::remove_all(folder_); }
  fs::path folder_;
  ManualClock clock_{std::chrono::system_clock::time_point(std::chrono::hours(500000))};
};

TEST_F(WebLoginTest, TheTokenIsMadeOnce0600AndKeptAcrossStarts) {
  const fs::path file = folder_ / "web.token";
  auto made = load_or_make_token(file);
  ASSERT_TRUE(made.ok()) << made.error().what;
  EXPECT_EQ(made->size(), 64u);
  struct stat status {};
  ASSERT_EQ(::stat(file.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0600u);
  EXPECT_EQ(status.st_uid, ::geteuid());
  auto kept = load_or_make_token(file);
  ASSERT_TRUE(kept.ok()) << kept.error().what;
  EXPECT_EQ(*kept, *made);
}

TEST_F(WebLoginTest, ATokenFileOthersCouldReadOrThatHoldsNoTokenIsRefusedWithoutQuotingIt) {
  const fs::path file = folder_ / "web.token";
  ASSERT_TRUE(load_or_make_token(file).ok());
  ::chmod(file.c_str(), 0644);
  auto open = load_or_make_token(file);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().what.find("mode 0600"), std::string::npos);
  std::ofstream(folder_ / "bad.token") << "not-a-token-secret-value\n";
  ::chmod((folder_ / "bad.token").c_str(), 0600);
  auto bad = load_or_make_token(folder_ / "bad.token");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().what.find("not-a-token-secret-value"), std::string::npos) << bad.error().what;
}

TEST_F(WebLoginTest, ALoginCodeGivesOneSessionOnceAndExpires) {
  WebLogins logins(std::string(64, 'a'), clock_);
  auto code = logins.mint_login_code();
  ASSERT_TRUE(code.ok());
  EXPECT_NE(*code, std::string(64, 'a')) << "a login code is never the token";
  auto session = logins.redeem_login_code(*code);
  ASSERT_TRUE(session.has_value());
  EXPECT_EQ(session->csrf.size(), 64u);
  EXPECT_NE(session->csrf, session->id);
  EXPECT_FALSE(logins.redeem_login_code(*code).has_value()) << "a code is good once";
  EXPECT_NE(logins.find_session(session->id), nullptr);
  EXPECT_EQ(logins.find_session(session->id + "0"), nullptr);
  EXPECT_EQ(logins.find_session(""), nullptr);

  auto late = logins.mint_login_code();
  ASSERT_TRUE(late.ok());
  clock_.advance(kLoginCodeLifetime + std::chrono::seconds(1));
  EXPECT_FALSE(logins.redeem_login_code(*late).has_value()) << "an expired code";
  clock_.advance(kSessionLifetime);
  EXPECT_EQ(logins.find_session(session->id), nullptr) << "an expired session";
}

TEST_F(WebLoginTest, TheTokenIsNotALoginCodeAndWrongSecretsAreRefused) {
  const std::string token(64, 'b');
  WebLogins logins(token, clock_);
  EXPECT_TRUE(logins.is_token(token));
  EXPECT_FALSE(logins.is_token(std::string(63, 'b')));
  EXPECT_FALSE(logins.is_token(std::string(63, 'b') + "c"));
  EXPECT_FALSE(logins.is_token(""));
  EXPECT_FALSE(logins.redeem_login_code(token).has_value());
  EXPECT_TRUE(same_secret("abc", "abc"));
  EXPECT_FALSE(same_secret("abc", "abd"));
  EXPECT_FALSE(same_secret("abc", "ab"));
}

}  // namespace
}  // namespace deskd::web
