// The [runner] key table (runner_keys()), which a reload walks to refuse a changed [runner]:
// it holds every key deskd.toml(5) documents and the config reads, and each row sees a change
// to its own key and to no other.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runner/config/config.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using testing::ConfigTest;
using testing::kAlpha;

// A row's keys as written in the file: "desk_uid_first/desk_uid_count" is two.
std::vector<std::string> written_keys(const RunnerKey& row) {
  std::vector<std::string> keys;
  std::stringstream text{std::string(row.key)};
  for (std::string key; std::getline(text, key, '/');) keys.push_back(key);
  return keys;
}

// The keys deskd.toml(5) documents under THE [runner] TABLE: each `.BI "key = "` line.
std::set<std::string> documented_runner_keys() {
  std::ifstream file(DESKD_SOURCE_DIR "/packaging/man/deskd.toml.5");
  std::set<std::string> keys;
  bool in_runner = false;
  const std::regex key_pattern("([a-z_]+) = ");
  for (std::string line; std::getline(file, line);) {
    if (line.starts_with(".SH")) in_runner = line == ".SH THE [runner] TABLE";
    if (!in_runner || !line.starts_with(".BI ")) continue;
    for (std::sregex_iterator match(line.begin(), line.end(), key_pattern), end; match != end; ++match) {
      keys.insert((*match)[1]);
    }
  }
  return keys;
}

// A [runner] line for each key, with a value other than the default.
const std::map<std::string, std::string> kChangedValues = {
    {"state_folder", "state_folder = \"other-state\""},
    {"socket", "socket = \"other.sock\""},
    {"socket_group", "socket_group = \"deskd\""},
    {"allowed_uids", "allowed_uids = [1000]"},
    {"allowed_groups", "allowed_groups = [\"traders\"]"},
    {"log_level", "log_level = \"debug\""},
    {"shutdown_grace_seconds", "shutdown_grace_seconds = 2.5"},
    {"client_buffer_mb", "client_buffer_mb = 16"},
    {"max_clients", "max_clients = 10"},
    {"require_user_namespace", "require_user_namespace = true"},
    {"desk_uid_first", "desk_uid_first = 1879113728"},
    {"desk_uid_count", "desk_uid_count = 1000"},
    {"web_socket", "web_socket = \"state/page.sock\""},
    {"web_listen", "web_listen = \"127.0.0.1:8080\""},
    // The certificate and key go together, and only with web_listen: one row.
    {"web_tls_cert", "web_listen = \"127.0.0.1:8080\"\nweb_tls_cert = \"cert.pem\"\nweb_tls_key = \"key.pem\""},
    {"web_tls_key", "web_listen = \"127.0.0.1:8080\"\nweb_tls_cert = \"c.pem\"\nweb_tls_key = \"k.pem\""},
};

TEST(RunnerKeysTest, TheTableHoldsEveryKeyTheManPageDocuments) {
  std::set<std::string> listed;
  for (const RunnerKey& row : runner_keys()) {
    for (const auto& key : written_keys(row)) EXPECT_TRUE(listed.insert(key).second) << key << " is listed twice";
  }
  const std::set<std::string> documented = documented_runner_keys();
  ASSERT_FALSE(documented.empty()) << "deskd.toml(5) has no [runner] keys";
  EXPECT_EQ(listed, documented);
}

TEST_F(ConfigTest, EachRunnerRowSeesAChangeToItsOwnKeyAndNoOther) {
  const Config plain = valid(kAlpha);
  std::set<std::string> tried;
  for (const RunnerKey& row : runner_keys()) {
    // Every [runner] key is taken only at start today: a reload that changes one is refused.
    EXPECT_TRUE(row.needs_restart) << row.key;
    ASSERT_NE(row.differs, nullptr) << row.key;
    EXPECT_FALSE(row.differs(plain.runner, plain.runner)) << row.key;
    for (const auto& key : written_keys(row)) {
      const auto value = kChangedValues.find(key);
      ASSERT_NE(value, kChangedValues.end()) << "no changed value to try for " << key;
      tried.insert(key);
      const Config changed = valid("[runner]\n" + value->second + "\n" + kAlpha);
      for (const RunnerKey& other : runner_keys()) {
        EXPECT_EQ(other.differs(plain.runner, changed.runner), &other == &row)
            << "changing " << key << ", row " << other.key;
      }
    }
  }
  EXPECT_EQ(tried.size(), kChangedValues.size()) << "a changed value for a key the table does not hold";
}

}  // namespace
}  // namespace deskd::app
