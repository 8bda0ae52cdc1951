#pragma once
// What the HTTP client tests share: an environment that is put back as it was, and the
// fixture that runs requests against the fake server on the test's own io_context.

#include <stdlib.h>

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "runner/http/http_client.h"

namespace deskd::model::testing {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Sets and unsets environment variables, and restores them when destroyed.
class ScopedEnvironment {
 public:
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void set(const std::string& name, const std::string& value) {
    save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    save(name);
    unsetenv(name.c_str());
  }

 private:
  void save(const std::string& name) {
    if (saved_.count(name)) return;
    const char* value = std::getenv(name.c_str());
    saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

class HttpClientTest : public ::testing::Test {
 protected:
  HttpClientTest() {
    // The developer's own proxy must not route the tests' requests.
    for (const char* name : {"HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"}) environment.unset(name);
  }

  static HttpSettings quick_settings() {
    HttpSettings settings;
    settings.connect_timeout = 3s;
    settings.idle_timeout = 3s;
    settings.proxy_from_environment = false;
    return settings;
  }

  static HttpRequest request_to(const std::string& url, std::string method = "GET", std::string body = "") {
    HttpRequest request;
    request.method = std::move(method);
    auto parsed = Url::parse(url);
    EXPECT_TRUE(parsed.ok()) << url;
    if (parsed.ok()) request.url = *parsed;
    request.body = std::move(body);
    return request;
  }

  // Runs `task` on the test's io_context to its end and returns its value (or throws).
  template <typename T>
  T run(asio::awaitable<T> task) {
    auto future = asio::co_spawn(io, std::move(task), asio::use_future);
    io.restart();
    io.run();
    return future.get();
  }

  struct Reply {
    unsigned status = 0;
    std::string body;
    std::optional<std::string> content_type;
  };

  static asio::awaitable<Reply> fetch(HttpClient& client, HttpRequest request) {
    auto response = co_await client.send(std::move(request));
    Reply reply;
    reply.status = response->status();
    reply.content_type = response->header("CONTENT-type");
    reply.body = co_await response->read_all();
    co_return reply;
  }

  // The HttpError that `task` ends with; fails the test if it ends otherwise.
  template <typename T>
  std::optional<HttpError> failure_of(asio::awaitable<T> task) {
    try {
      run(std::move(task));
      ADD_FAILURE() << "expected an HttpError";
    } catch (const HttpError& error) {
      return error;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "unexpected exception: " << error.what();
    }
    return std::nullopt;
  }

  ScopedEnvironment environment;
  asio::io_context io;
};


}  // namespace deskd::model::testing
