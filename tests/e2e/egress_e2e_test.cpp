// network = "allowlist" end to end: a root `deskd serve` in the test's own namespaces, desks
// whose bash runs curl, Python and git against the small internet (e2e/small_internet.h),
// and what a user sees: the tools' output, deskd's 403 reasons, NETWORK_REFUSED events in
// the journal and in `deskctl events`, the network in `deskctl status`. Canaries on the
// refused addresses (and a listener on the test's own loopback) show what was never reached.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/daemon_fixture.h"
#include "e2e/deskd_process.h"
#include "e2e/serve_test_support.h"
#include "e2e/small_internet.h"
#include "e2e/turn_tools.h"

namespace deskd::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kAllowlistSandbox = std::string(R"([desk.sandbox]
network = "allowlist"
allowed_hosts = ["www.egress.test", "*.svc.egress.test", "inside.egress.test", "loop.egress.test:8081",
                 "meta.egress.test", "rebind.egress.test", ")") + kAllowedSubnet + "\"]\n";

// Runs `commands` as one turn of a desk "net" with `sandbox_table`, and returns the outcomes;
// `daemon` is left running for more checks.
class EgressE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (internet_.needs_root()) GTEST_SKIP() << internet_.why();
    ASSERT_TRUE(internet_.ok()) << internet_.why();
  }

  std::vector<ToolOutcome> run(ServeDaemon& daemon, const std::vector<std::string>& commands) {
    std::vector<ScriptedCall> calls;
    for (const auto& command : commands) calls.push_back(bash_call(command));
    return run_calls(daemon, calls);
  }

  std::vector<ToolOutcome> run_calls(ServeDaemon& daemon, const std::vector<ScriptedCall>& calls) {
    std::filesystem::copy_file(internet_.ca_file(), daemon.desk_directory("net") + "/ca.pem",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(daemon.desk_directory("net") + "/ca.pem", std::filesystem::perms(0644));
    std::ofstream(daemon.script_path("net")) << scripted_turn(calls);
    std::string why;
    if (!daemon.started() && !daemon.start({}, &why)) {
      ADD_FAILURE() << "deskd did not start: " << why;
      return {};
    }
    auto outcomes = run_turn(daemon, "net", "go");
    EXPECT_EQ(outcomes.size(), calls.size());
    outcomes.resize(calls.size());
    return outcomes;
  }

  std::vector<boost::json::object> refusals(const ServeDaemon& daemon) const {
    std::vector<boost::json::object> found;
    for (auto& event : json_lines(daemon.journal_path("net"))) {
      if (event_kind(event) == "NETWORK_REFUSED") found.push_back(std::move(event));
    }
    return found;
  }

  SmallInternet internet_;
};

TEST_F(EgressE2eTest, AllowedNamesAreReachedByCurlPythonAndGitOverHttpAndHttps) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const auto outcomes = run(daemon, {
      "curl -sS -m 20 http://www.egress.test/hello",
      "SSL_CERT_FILE=$PWD/ca.pem curl -sS -m 20 https://www.egress.test/hello",
      "SSL_CERT_FILE=$PWD/ca.pem python3 -c \"import urllib.request; "
      "print(urllib.request.urlopen('https://api.svc.egress.test/hello', timeout=20).read().decode())\"",
      "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://api.svc.egress.test/hello', timeout=20).read().decode())\"",
      "GIT_SSL_CAINFO=$PWD/ca.pem git ls-remote https://git.svc.egress.test/repo.git",
      "git ls-remote http://git.svc.egress.test/repo.git",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("hello from www.egress.test at 10.201.0.10")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("hello from www.egress.test at 10.201.0.10")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("hello from api.svc.egress.test at 10.201.0.10")) << describe(outcomes[2]);
  EXPECT_THAT(outcomes[3].text, HasSubstr("hello from api.svc.egress.test at 10.201.0.10")) << describe(outcomes[3]);
  EXPECT_THAT(outcomes[4].text, HasSubstr("refs/heads/main")) << describe(outcomes[4]);
  EXPECT_THAT(outcomes[5].text, HasSubstr("refs/heads/main")) << describe(outcomes[5]);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.allowed()) << describe(outcome);
  EXPECT_TRUE(refusals(daemon).empty());
  // deskd's metrics count each connection the proxy made (git may make more than one).
  const std::string metrics = daemon.deskctl({"metrics"}).output;
  EXPECT_GE(sample_of(metrics, "deskd_egress_requests_total{desk=\"net\",outcome=\"allowed\"}"), 6) << metrics;
  EXPECT_EQ(sample_of(metrics, "deskd_egress_requests_total{desk=\"net\",outcome=\"refused\"}"), -1) << metrics;
  const DeskctlResult status = daemon.deskctl({"status", "net"});
  EXPECT_THAT(status.output, HasSubstr("network:        allowlist (through deskd's proxy): www.egress.test, *.svc.egress.test"));
  const DeskctlResult answered = daemon.deskctl({"ask", "net", "/status"});
  EXPECT_THAT(answered.output, HasSubstr("Network: allowlist (through deskd's proxy): www.egress.test, *.svc.egress.test"))
      << answered.error_output;
}

TEST_F(EgressE2eTest, ANameNotOnTheListIsRefusedWithA403AndAnEvent) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const auto outcomes = run(daemon, {
      "curl -sS -m 20 http://other.egress.test/hello",
      "SSL_CERT_FILE=$PWD/ca.pem curl -sS -m 20 https://other.egress.test/hello",
      "python3 -c \"import urllib.request; urllib.request.urlopen('http://other.egress.test/hello', timeout=20)\"",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("deskd refused other.egress.test:80: not in allowed_hosts")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("403")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("HTTP Error 403")) << describe(outcomes[2]);
  EXPECT_FALSE(outcomes[1].allowed());
  EXPECT_FALSE(outcomes[2].allowed());
  const auto refused = refusals(daemon);
  ASSERT_EQ(refused.size(), 3u);
  EXPECT_EQ(event_data(refused[0], "host"), "other.egress.test");
  EXPECT_EQ(refused[0].at("data").at("port"), 80);
  EXPECT_EQ(event_data(refused[0], "why"), "not in allowed_hosts");
  EXPECT_EQ(refused[1].at("data").at("port"), 443);
  const DeskctlResult events = daemon.deskctl({"events", "net"});
  EXPECT_THAT(events.output, HasSubstr("network refused other.egress.test:443: not in allowed_hosts"));
  // The same refusal as every enforcer's (REFUSED), named at the end of the tool result too.
  EXPECT_THAT(outcomes[0].text, HasSubstr("deskd refused: other.egress.test:80 \u2014 not in allowed_hosts"))
      << describe(outcomes[0]);
  const DeskctlResult listed = daemon.deskctl({"refusals", "net"});
  EXPECT_THAT(listed.output, HasSubstr("refused by egress: other.egress.test:80 \u2014 not in allowed_hosts"));
  const std::string metrics = daemon.deskctl({"metrics"}).output;
  EXPECT_EQ(sample_of(metrics, "deskd_egress_requests_total{desk=\"net\",outcome=\"refused\"}"), 3) << metrics;
  // REFUSED folds the second refusal of port 80 into a record its 10 s fold window ends
  // with: 2 until then (3 on a machine slow enough to end the window during the turn).
  const double refused_records = sample_of(metrics, "deskd_refusals_total{desk=\"net\",enforcer=\"egress\"}");
  EXPECT_GE(refused_records, 2) << metrics;
  EXPECT_LE(refused_records, 3) << metrics;
}

TEST_F(EgressE2eTest, AnAllowedNameResolvingToAPrivateLoopbackOrMetadataAddressIsRefused) {
  // A listener on the test's own loopback, where deskd runs: loop.egress.test points there.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(8081);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const auto outcomes = run(daemon, {
      "curl -sS -m 20 http://inside.egress.test/hello",
      "SSL_CERT_FILE=$PWD/ca.pem curl -sS -m 20 https://inside.egress.test/hello",
      "curl -sS -m 20 http://loop.egress.test:8081/hello",
      "curl -sS -m 20 http://meta.egress.test/latest/meta-data/",
      "curl -sS -m 20 http://10.202.0.10/hello",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("resolves to 10.202.0.10, a private address")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("403")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("resolves to 127.0.0.1, a loopback address")) << describe(outcomes[2]);
  EXPECT_THAT(outcomes[3].text, HasSubstr("resolves to 169.254.169.254, a metadata address")) << describe(outcomes[3]);
  EXPECT_THAT(outcomes[4].text, HasSubstr("deskd refused 10.202.0.10:80: not in allowed_hosts")) << describe(outcomes[4]);
  EXPECT_EQ(refusals(daemon).size(), 5u);
  EXPECT_EQ(internet_.canary_log(), "");
  EXPECT_LT(::accept(listener, nullptr, nullptr), 0) << "deskd connected to its own loopback";
  ::close(listener);
}

TEST_F(EgressE2eTest, ARebindingResolverNeverGetsTheDeskToTheRefusedAddress) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  // Each request makes deskd resolve once; the answers alternate between the subnets.
  const auto outcomes = run(daemon, {
      "for i in 1 2 3 4 5 6; do curl -sS -m 20 http://rebind.egress.test/hello; echo; done",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("hello from rebind.egress.test at 10.201.0.12")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[0].text, HasSubstr("resolves to 10.202.0.12, a private address")) << describe(outcomes[0]);
  EXPECT_GE(refusals(daemon).size(), 1u);
  EXPECT_EQ(internet_.canary_log(), "");
}

TEST_F(EgressE2eTest, TheDeskReachesNoAddressDirectlyNorByRawSockets) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const auto outcomes = run(daemon, {
      "ls /sys/class/net",
      "curl -sS -m 10 --noproxy '*' http://10.201.0.10/hello",
      "python3 -c \"import socket; socket.create_connection(('10.201.0.10', 80), timeout=10)\"",
      "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\"",
      "python3 -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\"",
  });
  EXPECT_THAT(outcomes[0].text, ::testing::StartsWith("lo\n[exit status 0]")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("Couldn't connect")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("Network is unreachable")) << describe(outcomes[2]);
  EXPECT_THAT(outcomes[3].text, HasSubstr("PermissionError")) << describe(outcomes[3]);
  EXPECT_THAT(outcomes[4].text, HasSubstr("PermissionError")) << describe(outcomes[4]);
  for (std::size_t index = 1; index < outcomes.size(); ++index) EXPECT_FALSE(outcomes[index].allowed());
}

// Tools that ignore proxy variables (node's fetch and https module) reach an exact allowed
// name through the sandbox's /etc/hosts: the name's own loopback address, where deskd takes
// the connection as a tunnel to the name with the same checks as a CONNECT. No proxy
// variable is left for them to use.
constexpr const char* kNoProxyVariables =
    "unset HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY http_proxy https_proxy all_proxy no_proxy; ";

TEST_F(EgressE2eTest, NodeReachesAnExactAllowedNameWithoutProxyVariables) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const std::string node = std::string(kNoProxyVariables) + "NODE_EXTRA_CA_CERTS=$PWD/ca.pem node -e ";
  const auto outcomes = run_calls(daemon, {
      bash_call(node + "\"fetch('https://www.egress.test/hello').then(r => r.text()).then(t => console.log(t))\""),
      bash_call(node + "\"require('https').get('https://www.egress.test/hello', r => r.pipe(process.stdout))\""),
      bash_call(node + "\"require('http').get('http://www.egress.test/hello', r => r.pipe(process.stdout))\""),
      bash_call(std::string(kNoProxyVariables) + "getent hosts www.egress.test; cat /etc/hosts"),
      ScriptedCall{"read_file", {{"path", "/etc/hosts"}}},
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("hello from www.egress.test at 10.201.0.10")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("hello from www.egress.test at 10.201.0.10")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("hello from www.egress.test at 10.201.0.10")) << describe(outcomes[2]);
  for (std::size_t index = 0; index < 3; ++index) EXPECT_TRUE(outcomes[index].allowed()) << describe(outcomes[index]);
  // www.egress.test is the first exact name of the list; loop.egress.test:8081 the third.
  EXPECT_THAT(outcomes[3].text, HasSubstr("127.100.0.1     www.egress.test")) << describe(outcomes[3]);
  EXPECT_THAT(outcomes[3].text, HasSubstr("127.100.0.3\tloop.egress.test")) << describe(outcomes[3]);
  EXPECT_THAT(outcomes[3].text, HasSubstr("localhost")) << describe(outcomes[3]);
  EXPECT_THAT(outcomes[3].text, Not(HasSubstr("svc.egress.test"))) << "a wildcard has no line";
  // One world: the file tools read the same /etc/hosts as the desk's bash.
  EXPECT_TRUE(outcomes[4].allowed()) << describe(outcomes[4]);
  EXPECT_THAT(outcomes[4].text, HasSubstr("127.100.0.3\tloop.egress.test")) << describe(outcomes[4]);
  EXPECT_TRUE(refusals(daemon).empty());
}

TEST_F(EgressE2eTest, WithoutProxyVariablesOtherNamesWildcardsAndRefusedAddressesFailClosed) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const std::string fetch = std::string(kNoProxyVariables) + "NODE_EXTRA_CA_CERTS=$PWD/ca.pem node -e ";
  const auto outcomes = run(daemon, {
      fetch + "\"fetch('https://other.egress.test/hello').then(r => r.text()).then(console.log)\"",
      fetch + "\"fetch('https://api.svc.egress.test/hello').then(r => r.text()).then(console.log)\"",
      // An exact name on a port it was not given: nothing listens there.
      std::string(kNoProxyVariables) + "curl -sS -m 10 http://www.egress.test:8080/hello",
      // An exact name that resolves (for deskd) to loopback: refused as a CONNECT would be.
      std::string(kNoProxyVariables) + "curl -sS -m 10 http://loop.egress.test:8081/hello",
      std::string(kNoProxyVariables) + "curl -sS -m 10 http://inside.egress.test/hello",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("fetch failed")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("fetch failed")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("Couldn't connect")) << describe(outcomes[2]);
  // Closed by deskd: the request curl sent unread makes the close a reset.
  const auto closed = ::testing::AnyOf(HasSubstr("Connection reset by peer"), HasSubstr("Empty reply from server"));
  EXPECT_THAT(outcomes[3].text, closed) << describe(outcomes[3]);
  EXPECT_THAT(outcomes[4].text, closed) << describe(outcomes[4]);
  for (const auto& outcome : outcomes) EXPECT_FALSE(outcome.allowed()) << describe(outcome);
  const auto refused = refusals(daemon);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(event_data(refused[0], "host"), "loop.egress.test");
  EXPECT_EQ(refused[0].at("data").at("port"), 8081);
  EXPECT_THAT(event_data(refused[0], "why"), HasSubstr("resolves to 127.0.0.1, a loopback address"));
  EXPECT_EQ(event_data(refused[1], "host"), "inside.egress.test");
  EXPECT_THAT(event_data(refused[1], "why"), HasSubstr("resolves to 10.202.0.10, a private address"));
  EXPECT_EQ(internet_.canary_log(), "");
}

TEST_F(EgressE2eTest, PythonRequestsAndPipWorkThroughTheProxy) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const auto outcomes = run(daemon, {
      "command -v python3",
      "REQUESTS_CA_BUNDLE=$PWD/ca.pem python3 -c \"import requests; "
      "print(requests.get('https://api.svc.egress.test/hello', timeout=20).text)\"",
      "python3 -c \"import requests; print(requests.get('http://other.egress.test/hello', timeout=20).status_code)\"",
      // pip with nothing of its own: no config, no cache, no version check, one index.
      "PIP_CONFIG_FILE=/dev/null python3 -m pip install --no-cache-dir --disable-pip-version-check --no-deps "
      "--cert $PWD/ca.pem --index-url https://www.egress.test/simple/ --target /tmp/packages tinypkg 2>&1 && "
      "PYTHONPATH=/tmp/packages python3 -c 'import tinypkg; print(tinypkg.GREETING)'",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("/usr/bin/python3")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("hello from api.svc.egress.test at 10.201.0.10")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("403")) << describe(outcomes[2]);
  EXPECT_THAT(outcomes[3].text, HasSubstr("tinypkg from the small internet")) << describe(outcomes[3]);
  EXPECT_TRUE(outcomes[3].allowed()) << describe(outcomes[3]);
}

TEST_F(EgressE2eTest, SocksFiveOnTheProxyPortGoesThroughTheSameChecks) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox}});
  const std::string socks = std::string(kNoProxyVariables) + "curl -sS -m 20 --socks5-hostname 127.0.0.1:3128 ";
  const auto outcomes = run(daemon, {
      socks + "--cacert $PWD/ca.pem https://api.svc.egress.test/hello",
      socks + "http://other.egress.test/hello",
      socks + "http://meta.egress.test/latest/meta-data/",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("hello from api.svc.egress.test at 10.201.0.10")) << describe(outcomes[0]);
  EXPECT_TRUE(outcomes[0].allowed()) << describe(outcomes[0]);
  EXPECT_FALSE(outcomes[1].allowed()) << describe(outcomes[1]);
  EXPECT_FALSE(outcomes[2].allowed()) << describe(outcomes[2]);
  const auto refused = refusals(daemon);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(event_data(refused[0], "host"), "other.egress.test");
  EXPECT_EQ(event_data(refused[0], "why"), "not in allowed_hosts");
  EXPECT_THAT(event_data(refused[1], "why"), HasSubstr("resolves to 169.254.169.254, a metadata address"));
  EXPECT_EQ(internet_.canary_log(), "");
}

TEST_F(EgressE2eTest, ASilentTunnelIsClosedAfterTheIdleTimeout) {
  ServeDaemon daemon({DeskSetup{.name = "net", .script = "", .tables = kAllowlistSandbox + "egress_idle_seconds = 1\n"}});
  const auto outcomes = run(daemon, {
      // A tunnel to the name's address that never speaks: deskd ends it, the read sees EOF
      // long before `timeout` would stop it (status 124).
      "exec 5<>/dev/tcp/www.egress.test/80; timeout 20 cat <&5; echo \"cat ended: $?\"",
      "exec 6<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT www.egress.test:80 HTTP/1.1\\r\\n\\r\\n' >&6; "
      "timeout 20 cat <&6; echo \"cat ended: $?\"",
  });
  EXPECT_THAT(outcomes[0].text, HasSubstr("cat ended: 0")) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("200 Connection established")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("cat ended: 0")) << describe(outcomes[1]);
}

TEST_F(EgressE2eTest, NetworkNoneAndHostBehaveAsBefore) {
  ServeDaemon none({DeskSetup{.name = "net", .script = "", .tables = "[desk.sandbox]\nnetwork = \"none\"\n"}});
  const auto closed = run(none, {"env | grep -ci proxy; curl -sS -m 10 http://10.201.0.10/hello"});
  EXPECT_THAT(closed[0].text, HasSubstr("0\n")) << describe(closed[0]);
  EXPECT_THAT(closed[0].text, HasSubstr("Couldn't connect")) << describe(closed[0]);
  none.stop();
  // "host" is deskd's network: here the test's own namespace, which holds only the small internet.
  ServeDaemon host({DeskSetup{.name = "net", .script = "", .tables = "[desk.sandbox]\nnetwork = \"host\"\n"}});
  const auto open = run(host, {"curl -sS -m 10 http://10.202.0.10/hello; curl -sS -m 10 http://10.201.0.10/hello"});
  EXPECT_THAT(open[0].text, HasSubstr("hello from 10.201.0.10 at 10.201.0.10")) << describe(open[0]);
  EXPECT_THAT(internet_.canary_log(), HasSubstr("10.202.0.10:80 reached")) << "the host network reaches everything";
}

TEST_F(EgressE2eTest, ADeskPastItsByteBudgetOrConnectionLimitIsCutOffAndTold) {
  ServeDaemon daemon({DeskSetup{.name = "net",
                                .script = "",
                                .tables = kAllowlistSandbox + "egress_mb = 1\negress_connections = 2\n"}});
  const auto outcomes = run(daemon, {
      "curl -sS -m 20 -o /dev/null -w '%{size_download}\\n' http://www.egress.test/bytes/3000000",
      "curl -sS -m 20 http://www.egress.test/hello",
      // Two connections that send nothing hold both places; the third is refused at once.
      "exec 5<>/dev/tcp/127.0.0.1/3128 6<>/dev/tcp/127.0.0.1/3128; sleep 1; exec 7<>/dev/tcp/127.0.0.1/3128; "
      "printf 'CONNECT www.egress.test:443 HTTP/1.1\\r\\n\\r\\n' >&7; timeout 10 tail -n 1 <&7",
  });
  const auto digits = outcomes[0].text.find_first_of("0123456789");
  ASSERT_NE(digits, std::string::npos) << describe(outcomes[0]);
  EXPECT_LT(std::atol(outcomes[0].text.c_str() + digits), 3000000L) << describe(outcomes[0]);
  EXPECT_THAT(outcomes[1].text, HasSubstr("egress byte budget (1 MiB, egress_mb) is spent")) << describe(outcomes[1]);
  EXPECT_THAT(outcomes[2].text, HasSubstr("the desk already has 2 connections open (egress_connections)"))
      << describe(outcomes[2]);
  const auto refused = refusals(daemon);
  ASSERT_GE(refused.size(), 3u);
  // The refusal for the limit names what was asked for: deskd read the request head first.
  EXPECT_EQ(event_data(refused.back(), "host"), "www.egress.test");
  EXPECT_EQ(refused.back().at("data").at("port"), 443);
}

TEST_F(EgressE2eTest, DeskdShellRunsTheSameProxyAndDeskdSandboxRefusesTheMode) {
  TemporaryDesk desk;
  std::filesystem::copy_file(internet_.ca_file(), desk.directory() + "/ca.pem");
  std::filesystem::permissions(desk.directory() + "/ca.pem", std::filesystem::perms(0644));
  DeskdProcess shell({"shell", "--desk", desk.directory(), "--net", "allowlist", "--allow", "www.egress.test:443",
                      "--allow", kAllowedSubnet});
  shell.send("SSL_CERT_FILE=$PWD/ca.pem curl -sS -m 20 https://www.egress.test/hello\n");
  shell.send("curl -sS -m 20 http://www.egress.test/hello\n");
  shell.close_input();
  const std::string output = shell.read_rest();
  EXPECT_EQ(shell.wait(), 0);
  EXPECT_THAT(output, HasSubstr("hello from www.egress.test at 10.201.0.10"));
  EXPECT_THAT(output, HasSubstr("deskd refused www.egress.test:80: not in allowed_hosts"));
  EXPECT_THAT(shell.error_output(), HasSubstr("deskd: network refused www.egress.test:80: not in allowed_hosts"));

  DeskdProcess once({"sandbox", "--desk", desk.directory(), "--net", "allowlist", "--", "true"});
  EXPECT_EQ(once.wait(), 125);
  EXPECT_THAT(once.error_output(), HasSubstr("needs deskd's egress proxy"));
}

}  // namespace
}  // namespace deskd::e2e
