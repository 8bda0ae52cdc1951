#pragma once
// Helpers for the provider tests against the fake loopback server: settings with a
// distinctive key and short retries, and one complete() call run to its end (or stopped)
// on a fresh io_context, with what came out and how long it took.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <optional>
#include <string>

#include "runner/model/model_provider.h"
#include "runner/model/provider_settings.h"
#include "runner/model/retry.h"

namespace deskd::model::testing {

/// A key no message may ever show.
inline constexpr std::string_view kApiKey = "sk-test-DESKD-KEY-9f3a71c4e2";

inline ProviderSettings test_settings(std::string base_url, std::string model) {
  ProviderSettings settings;
  settings.model = std::move(model);
  settings.base_url = std::move(base_url);
  settings.api_key = std::string(kApiKey);
  settings.max_tokens = 1024;
  settings.http.connect_timeout = std::chrono::seconds(2);
  settings.http.idle_timeout = std::chrono::seconds(5);
  settings.http.proxy_from_environment = false;
  settings.retry = RetryPolicy{3, std::chrono::milliseconds(10), std::chrono::milliseconds(2000)};
  return settings;
}

inline ModelRequest user_request(std::string text) {
  ModelRequest request;
  request.system = "You are a trading desk.";
  request.messages.push_back(boost::json::object{
      {"role", "user"}, {"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", std::move(text)}}}}});
  return request;
}

struct Outcome {
  std::optional<ModelResponse> response;
  std::exception_ptr failure;
  std::chrono::steady_clock::duration elapsed{};

  /// The failure's message ("" when it succeeded); checks that the key is not in it.
  std::string message() const {
    if (!failure) return "";
    std::string text;
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& error) {
      text = error.what();
    }
    EXPECT_EQ(text.find(kApiKey), std::string::npos) << "the API key leaked into: " << text;
    return text;
  }
  bool cancelled() const {
    try {
      if (failure) std::rethrow_exception(failure);
    } catch (const boost::system::system_error& error) {
      return error.code() == boost::asio::error::operation_aborted;
    } catch (...) {
    }
    return false;
  }
  /// The ProviderError it failed with; fails the test on anything else.
  std::optional<ProviderError> provider_error() const {
    try {
      if (failure) std::rethrow_exception(failure);
    } catch (const ProviderError& error) {
      (void)message();
      return error;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "not a ProviderError: " << error.what();
    }
    return std::nullopt;
  }
};

/// Runs provider.complete(request) on `io` for at most 10 s; with `stop_after`, emits a
/// terminal cancellation (a /stop) that long after the start.
inline Outcome run_complete(boost::asio::io_context& io, ModelProvider& provider, ModelRequest request,
                            std::optional<std::chrono::milliseconds> stop_after = std::nullopt) {
  namespace asio = boost::asio;
  Outcome outcome;
  bool done = false;
  asio::cancellation_signal stop;
  const auto started = std::chrono::steady_clock::now();
  asio::co_spawn(io, provider.complete(std::move(request)),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr failure, ModelResponse response) {
                   if (failure) {
                     outcome.failure = failure;
                   } else {
                     outcome.response = std::move(response);
                   }
                   outcome.elapsed = std::chrono::steady_clock::now() - started;
                   done = true;
                 }));
  asio::steady_timer stopper(io);
  if (stop_after) {
    stopper.expires_after(*stop_after);
    stopper.async_wait([&](boost::system::error_code error) {
      if (!error && !done) stop.emit(asio::cancellation_type::terminal);
    });
  }
  io.restart();
  while (!done && std::chrono::steady_clock::now() - started < std::chrono::seconds(10)) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  stopper.cancel();
  if (!done) {
    ADD_FAILURE() << "complete() did not end within 10 s";
    stop.emit(asio::cancellation_type::terminal);
    io.run_for(std::chrono::seconds(2));
  }
  io.poll();
  return outcome;
}

}  // namespace deskd::model::testing
