// [runner]'s web keys (docs/WEB.md): web_socket beside the control socket unless named or
// turned off, web_listen's forms, and a non-loopback address refused without TLS at its
// line and column.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/config/config.h"
#include "unit/config/config_test_support.h"

namespace deskd::app {
namespace {

using testing::ConfigTest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kAlpha;

TEST_F(ConfigTest, TheWebSocketIsBesideTheControlSocketUnlessNamedOrTurnedOff) {
  const Config plain = valid(std::string("[runner]\nsocket = \"run/deskd.sock\"\n") + kAlpha);
  EXPECT_EQ(plain.runner.web_socket_path, root_ / "run" / "web.sock");
  EXPECT_TRUE(plain.runner.web_listen_host.empty());
  const Config named = valid(std::string("[runner]\nweb_socket = \"page.sock\"\n") + kAlpha);
  EXPECT_EQ(named.runner.web_socket_path, root_ / "page.sock");
  const Config off = valid(std::string("[runner]\nweb_socket = \"\"\n") + kAlpha);
  EXPECT_TRUE(off.runner.web_socket_path.empty());
}

TEST_F(ConfigTest, WebListenTakesAnAddressAndPortAndLoopbackWithoutAHost) {
  const auto listen = [&](const std::string& value) {
    const Config config = valid("[runner]\nweb_listen = \"" + value + "\"\n" + kAlpha);
    return config.runner.web_listen_host + " " + std::to_string(config.runner.web_listen_port);
  };
  EXPECT_EQ(listen(":8080"), "127.0.0.1 8080");
  EXPECT_EQ(listen("8081"), "127.0.0.1 8081");
  EXPECT_EQ(listen("localhost:8082"), "127.0.0.1 8082");
  EXPECT_EQ(listen("127.0.0.5:8083"), "127.0.0.5 8083");
  EXPECT_EQ(listen("[::1]:8084"), "::1 8084");
}

TEST_F(ConfigTest, ANonLoopbackWebListenWithoutCertificateAndKeyIsRefusedAtItsLineAndColumn) {
  const auto load = parse(std::string("[runner]\nweb_listen = \"0.0.0.0:8443\"\n") + kAlpha);
  EXPECT_THAT(problems(load), ElementsAre(HasSubstr("2:14: 'web_listen' '0.0.0.0' is not a loopback address")));
  write("cert.pem", "x");
  write("key.pem", "x");
  valid(std::string("[runner]\nweb_listen = \"0.0.0.0:8443\"\nweb_tls_cert = \"cert.pem\"\n"
                    "web_tls_key = \"key.pem\"\n") +
        kAlpha);
}

TEST_F(ConfigTest, BadWebKeysAreRefused) {
  EXPECT_THAT(problems(parse(std::string("[runner]\nweb_listen = \"example.com:80\"\n") + kAlpha)),
              ElementsAre(HasSubstr("2:14: 'web_listen' must be")));
  EXPECT_THAT(problems(parse(std::string("[runner]\nweb_listen = \"127.0.0.1:99999\"\n") + kAlpha)),
              ElementsAre(HasSubstr("2:14: 'web_listen' must be")));
  EXPECT_THAT(problems(parse(std::string("[runner]\nweb_listen = \":8080\"\nweb_tls_cert = \"c.pem\"\n") + kAlpha)),
              ElementsAre(HasSubstr("'web_tls_cert' and 'web_tls_key' go together")));
  EXPECT_THAT(problems(parse(std::string("[runner]\nweb_tls_cert = \"c.pem\"\nweb_tls_key = \"k.pem\"\n") + kAlpha)),
              ElementsAre(HasSubstr("are for 'web_listen', which is not set")));
}

TEST_F(ConfigTest, TheWebTlsKeyIsHiddenFromEveryDesk) {
  const Config config = valid(std::string("[runner]\nweb_listen = \":8443\"\nweb_tls_cert = \"c.pem\"\n"
                                          "web_tls_key = \"k.pem\"\n") +
                              kAlpha);
  ASSERT_EQ(config.desks.size(), 1u);
  const auto& hidden = config.desks[0].hidden_paths;
  EXPECT_NE(std::find(hidden.begin(), hidden.end(), root_ / "k.pem"), hidden.end());
}

}  // namespace
}  // namespace deskd::app
