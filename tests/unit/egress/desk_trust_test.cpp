// The desk's trust end to end, short of the gate: a TLS server presenting a certificate the
// desk's CA minted, and the tools a desk runs — curl, Python's urllib and requests, Node's
// fetch — in a real sandbox given the desk's trust bundle (written by write_trust_bundle in a
// hidden 0700 state folder), with no option of their own. Without the bundle they refuse.
// The sandbox shares the host's network here only to reach the test's server on loopback.

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/egress/desk_authority.h"
#include "sandbox/launcher.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using asio::ip::tcp;

constexpr const char* kReply = "gated-hello";

// Answers every HTTPS request on 127.0.0.1 with kReply, on a thread of its own.
class TlsServer {
 public:
  explicit TlsServer(std::shared_ptr<asio::ssl::context> context)
      : context_(std::move(context)), acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    accept_next();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TlsServer() {
    io_.stop();
    thread_.join();
  }
  unsigned short port() const { return acceptor_.local_endpoint().port(); }

 private:
  using Stream = asio::ssl::stream<tcp::socket>;
  void accept_next() {
    acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error) return;
      auto stream = std::make_shared<Stream>(std::move(socket), *context_);
      stream->async_handshake(asio::ssl::stream_base::server, [stream](boost::system::error_code handshake_error) {
        if (handshake_error) return;
        auto request = std::make_shared<std::string>();
        asio::async_read_until(
            *stream, asio::dynamic_buffer(*request), "\r\n\r\n",
            [stream, request](boost::system::error_code read_error, std::size_t) {
              if (read_error) return;
              auto reply = std::make_shared<std::string>(
                  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                  std::to_string(std::string(kReply).size()) + "\r\nConnection: close\r\n\r\n" + kReply);
              asio::async_write(*stream, asio::buffer(*reply), [stream, reply](boost::system::error_code, std::size_t) {
                stream->async_shutdown([stream](boost::system::error_code) {});
              });
            });
      });
      accept_next();
    });
  }

  std::shared_ptr<asio::ssl::context> context_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t count; (count = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, count);
  return text;
}

class DeskTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "launches sandboxes sharing the host's network, which needs root";
    char pattern[] = "/var/tmp/deskd-desk-trust-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(root_ / "desk");
    fs::permissions(root_ / "desk", fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(root_ / "state");
    fs::permissions(root_ / "state", fs::perms::owner_all);
    auto authority = DeskAuthority::create("nifty", {"127.0.0.1"});
    ASSERT_TRUE(authority.ok()) << authority.error().what;
    authority_ = *authority;
    ASSERT_TRUE(write_trust_bundle(bundle(), authority_->certificate_pem()).ok());
    auto context = authority_->server_context("127.0.0.1");
    ASSERT_TRUE(context.ok()) << context.error().what;
    server_ = std::make_unique<TlsServer>(*context);
  }
  void TearDown() override {
    server_.reset();
    if (!root_.empty()) fs::remove_all(root_);
  }

  fs::path bundle() const { return root_ / "state" / "trust-bundle.pem"; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(server_->port()) + "/"; }

  // What `command` printed (both streams) in the desk's sandbox, and its exit status.
  std::pair<int, std::string> run(bool with_bundle, const std::vector<std::string>& command) const {
    const fs::path hidden[] = {root_ / "state"};
    sandbox::SandboxSpecBuilder builder(policy::Confinement::create(root_ / "desk", hidden).value());
    builder.network(sandbox::NetworkMode::host);
    if (with_bundle) builder.trust_bundle(bundle());
    auto spec = builder.build();
    if (!spec.ok()) return {-1, spec.error().what};
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, "pipe2 failed"};
    auto process = sandbox::launch_sandboxed(*spec, command, sandbox::StandardStreams{-1, fds[1], fds[1]});
    ::close(fds[1]);
    if (!process.ok()) {
      ::close(fds[0]);
      return {-1, process.error().what};
    }
    std::string output = read_all(fds[0]);
    ::close(fds[0]);
    auto status = process->wait();
    return {status.ok() ? *status : -1, output};
  }

  // Each client as a desk would run it: no option about certificates.
  std::vector<std::pair<std::string, std::vector<std::string>>> clients() const {
    std::vector<std::pair<std::string, std::vector<std::string>>> found;
    if (fs::exists("/usr/bin/curl")) found.push_back({"curl", {"/usr/bin/curl", "-sS", url()}});
    if (fs::exists("/usr/bin/python3")) {
      found.push_back({"urllib",
                       {"/usr/bin/python3", "-c",
                        "import urllib.request; print(urllib.request.urlopen('" + url() + "').read().decode())"}});
      found.push_back({"requests",
                       {"/usr/bin/python3", "-c",
                        "import importlib.util, sys\n"
                        "if importlib.util.find_spec('requests') is None: print('no requests'); sys.exit(0)\n"
                        "import requests; print(requests.get('" +
                            url() + "').text)"}});
    }
    if (fs::exists("/usr/bin/node")) {
      found.push_back(
          {"node fetch",
           {"/usr/bin/node", "-e",
            "fetch('" + url() +
                "').then(r => r.text()).then(t => console.log(t), e => { console.log(String(e.cause || e)); "
                "process.exit(1); })"}});
    }
    return found;
  }

  fs::path root_;
  std::shared_ptr<DeskAuthority> authority_;
  std::unique_ptr<TlsServer> server_;
};

TEST_F(DeskTrustTest, TheDesksToolsTrustTheDesksCaWithNoOptions) {
  const auto found = clients();
  if (found.empty()) GTEST_SKIP() << "none of curl, python3 and node is installed";
  for (const auto& [name, command] : found) {
    const auto [status, output] = run(true, command);
    if (output.find("no requests") != std::string::npos) continue;
    EXPECT_EQ(status, 0) << name << ": " << output;
    EXPECT_THAT(output, ::testing::HasSubstr(kReply)) << name;
  }
}

TEST_F(DeskTrustTest, WithoutTheBundleTheyRefuseTheCertificate) {
  const auto found = clients();
  if (found.empty()) GTEST_SKIP() << "none of curl, python3 and node is installed";
  for (const auto& [name, command] : found) {
    const auto [status, output] = run(false, command);
    if (output.find("no requests") != std::string::npos) continue;
    EXPECT_NE(status, 0) << name << ": " << output;
    EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr(kReply))) << name;
  }
}

}  // namespace
}  // namespace deskd::egress
