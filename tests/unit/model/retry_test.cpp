// Retries: which failures are tried again, how long the waits are, what the last error
// says, and that a /stop ends a wait at once.

#include "runner/model/retry.h"

#include <boost/asio.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <future>

namespace deskd::model {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

const RetryPolicy kTestPolicy{3, milliseconds(10), milliseconds(2000)};

TEST(RetryTest, RetryableStatuses) {
  for (unsigned status : {408u, 429u, 500u, 502u, 503u, 504u, 529u, 599u}) EXPECT_TRUE(is_retryable_status(status)) << status;
  for (unsigned status : {200u, 400u, 401u, 403u, 404u, 413u, 422u, 600u}) EXPECT_FALSE(is_retryable_status(status)) << status;
}

TEST(RetryTest, RetryAfterInSecondsMillisecondsOrADate) {
  const auto now = std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(parse_retry_after(std::nullopt, "1", now), milliseconds(1000));
  EXPECT_EQ(parse_retry_after(std::nullopt, " 1.5 ", now), milliseconds(1500));
  EXPECT_EQ(parse_retry_after("250", "7", now), milliseconds(250)) << "retry-after-ms is the finer one";
  EXPECT_EQ(parse_retry_after("soon", "7", now), milliseconds(7000)) << "an unreadable retry-after-ms is passed over";
  EXPECT_EQ(parse_retry_after(std::nullopt, "Wed, 21 Oct 2015 07:28:30 GMT", now), milliseconds(30000));
  EXPECT_EQ(parse_retry_after(std::nullopt, "Wed, 21 Oct 2015 07:00:00 GMT", now), milliseconds(0));
  EXPECT_EQ(parse_retry_after(std::nullopt, "later", now), std::nullopt);
  EXPECT_EQ(parse_retry_after(std::nullopt, "-3", now), std::nullopt);
  EXPECT_EQ(parse_retry_after(std::nullopt, std::nullopt, now), std::nullopt);
}

TEST(RetryTest, BackoffDoublesWithFullJitterAndIsCapped) {
  const RetryPolicy policy{10, milliseconds(500), milliseconds(30000)};
  EXPECT_EQ(backoff_delay(policy, 0, std::nullopt, 1.0), milliseconds(500));
  EXPECT_EQ(backoff_delay(policy, 1, std::nullopt, 1.0), milliseconds(1000));
  EXPECT_EQ(backoff_delay(policy, 3, std::nullopt, 1.0), milliseconds(4000));
  EXPECT_EQ(backoff_delay(policy, 3, std::nullopt, 0.5), milliseconds(2000));
  EXPECT_EQ(backoff_delay(policy, 3, std::nullopt, 0.0), milliseconds(0)) << "full jitter reaches down to zero";
  EXPECT_EQ(backoff_delay(policy, 9, std::nullopt, 1.0), milliseconds(30000));
  EXPECT_EQ(backoff_delay(policy, 4000000000u, std::nullopt, 1.0), milliseconds(30000)) << "no overflow";
  EXPECT_EQ(backoff_delay(policy, 0, milliseconds(7000), 0.1), milliseconds(7000)) << "the server's word, no jitter";
  EXPECT_EQ(backoff_delay(policy, 0, milliseconds(90000), 0.1), milliseconds(30000)) << "capped at max_delay";
}

TEST(RetryTest, HttpErrorsBeforeAndAfterTheReplyBegan) {
  EXPECT_TRUE(provider_error_from(HttpError(HttpError::Kind::connect, "refused"), "The API", false).retryable());
  EXPECT_TRUE(provider_error_from(HttpError(HttpError::Kind::closed, "reset"), "The API", true).retryable());
  EXPECT_TRUE(provider_error_from(HttpError(HttpError::Kind::timeout, "no answer"), "The API", false).retryable());
  const ProviderError stalled = provider_error_from(HttpError(HttpError::Kind::timeout, "nothing for 0.3 s"), "The API", true);
  EXPECT_FALSE(stalled.retryable()) << "a stalled stream ends the turn after one idle time";
  EXPECT_THAT(stalled.what(), HasSubstr("stalled"));
  EXPECT_FALSE(provider_error_from(HttpError(HttpError::Kind::tls, "bad certificate"), "The API", false).retryable());
  try {
    (void)provider_error_from(HttpError(HttpError::Kind::cancelled, "stopped"), "The API", true);
    FAIL() << "a cancelled exchange must throw";
  } catch (const boost::system::system_error& error) {
    EXPECT_EQ(error.code(), asio::error::operation_aborted);
  }
}

TEST(RetryTest, RedactRemovesEveryCopyOfTheSecret) {
  EXPECT_EQ(redact("key sk-SECRET and sk-SECRET again", "sk-SECRET"), "key [redacted] and [redacted] again");
  EXPECT_EQ(redact("a short key", "a"), "a short key");
  EXPECT_EQ(redact("nothing", ""), "nothing");
}

// Runs `attempt` through complete_with_retries on a fresh io_context; returns the
// response or rethrows what it threw.
ModelResponse run(const RetryPolicy& policy, ModelAttempt attempt) {
  asio::io_context context;
  auto future = asio::co_spawn(context, complete_with_retries(policy, "The test API", std::move(attempt)), asio::use_future);
  context.run();
  return future.get();
}

// An attempt that throws the next of `failures`, then answers "fine".
struct ScriptedAttempts {
  std::vector<std::function<void()>> failures;
  int calls = 0;
  asio::awaitable<ModelResponse> operator()() {
    const int index = calls++;
    if (index < static_cast<int>(failures.size())) failures[static_cast<std::size_t>(index)]();
    ModelResponse response;
    response.text = "fine";
    co_return response;
  }
};

TEST(RetryTest, ARetryableFailureIsTriedAgain) {
  ScriptedAttempts attempts;
  attempts.failures.push_back([] { throw ProviderError("HTTP 529 overloaded", true, 529); });
  attempts.failures.push_back([] { throw HttpError(HttpError::Kind::connect, "connection refused"); });
  const ModelResponse response = run(kTestPolicy, [&attempts] { return attempts(); });
  EXPECT_EQ(response.text, "fine");
  EXPECT_EQ(attempts.calls, 3);
}

TEST(RetryTest, ANonRetryableFailureIsThrownAtOnce) {
  ScriptedAttempts attempts;
  attempts.failures.push_back([] { throw ProviderError("HTTP 400: bad request", false, 400); });
  try {
    run(kTestPolicy, [&attempts] { return attempts(); });
    FAIL() << "expected a ProviderError";
  } catch (const ProviderError& error) {
    EXPECT_EQ(std::string(error.what()), "HTTP 400: bad request");
    EXPECT_EQ(error.http_status(), 400u);
  }
  EXPECT_EQ(attempts.calls, 1);
}

TEST(RetryTest, TheLastErrorSaysHowManyAttemptsWereMade) {
  ScriptedAttempts attempts;
  for (int i = 0; i < 10; ++i) attempts.failures.push_back([i] { throw ProviderError("HTTP 503 number " + std::to_string(i), true, 503); });
  try {
    run(kTestPolicy, [&attempts] { return attempts(); });
    FAIL() << "expected a ProviderError";
  } catch (const ProviderError& error) {
    EXPECT_THAT(error.what(), HasSubstr("The test API still failed after 4 attempts"));
    EXPECT_THAT(error.what(), HasSubstr("HTTP 503 number 3"));
    EXPECT_FALSE(error.retryable());
  }
  EXPECT_EQ(attempts.calls, 4);
}

TEST(RetryTest, ACancelledRequestIsNotRetried) {
  ScriptedAttempts attempts;
  attempts.failures.push_back([] { throw HttpError(HttpError::Kind::cancelled, "stopped"); });
  try {
    run(kTestPolicy, [&attempts] { return attempts(); });
    FAIL() << "expected operation_aborted";
  } catch (const boost::system::system_error& error) {
    EXPECT_EQ(error.code(), asio::error::operation_aborted);
  }
  EXPECT_EQ(attempts.calls, 1);
}

TEST(RetryTest, AStopEndsTheWaitAtOnce) {
  ScriptedAttempts attempts;
  // The server asks for 10 s (within max_delay): only the cancellation can end the wait early.
  attempts.failures.push_back([] { throw ProviderError("HTTP 429", true, 429, milliseconds(10000)); });
  const RetryPolicy patient{3, milliseconds(10), milliseconds(60000)};
  asio::io_context context;
  asio::cancellation_signal stop;
  std::exception_ptr failure;
  bool done = false;
  asio::co_spawn(context, complete_with_retries(patient, "The test API", [&attempts] { return attempts(); }),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr error, const ModelResponse&) {
                   failure = error;
                   done = true;
                 }));
  asio::steady_timer later(context, milliseconds(50));
  later.async_wait([&](boost::system::error_code) { stop.emit(asio::cancellation_type::terminal); });
  const auto started = std::chrono::steady_clock::now();
  context.run_for(std::chrono::seconds(5));
  EXPECT_TRUE(done);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  ASSERT_TRUE(failure);
  try {
    std::rethrow_exception(failure);
  } catch (const boost::system::system_error& error) {
    EXPECT_EQ(error.code(), asio::error::operation_aborted);
  } catch (const std::exception& error) {
    ADD_FAILURE() << "not a cancellation: " << error.what();
  }
  EXPECT_EQ(attempts.calls, 1);
}

}  // namespace
}  // namespace deskd::model
