#include "runner/model/retry.h"

#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <random>

#include "base/ascii_text.h"

namespace deskd::model {
namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

// A header value's optional white space (RFC 9110, 5.6.3): spaces and tabs.
constexpr std::string_view kOptionalWhiteSpace = " \t";

// A non-negative decimal number filling all of `text`, e.g. "2", "1.5".
std::optional<double> parse_number(std::string_view text) {
  text = trim(text, kOptionalWhiteSpace);
  double number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || !(number >= 0) || !std::isfinite(number)) {
    return std::nullopt;
  }
  return number;
}

// A day is far beyond any max_delay and keeps the conversion to milliseconds in range.
milliseconds from_milliseconds(double count) { return milliseconds(static_cast<std::int64_t>(std::min(count, 86'400'000.0))); }

// An HTTP date (IMF-fixdate, "Wed, 21 Oct 2015 07:28:00 GMT"), the only form servers send
// today; the obsolete RFC 850 and asctime forms are not read.
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text) {
  const std::string copy(trim(text, kOptionalWhiteSpace));
  std::tm parts{};
  const char* end = strptime(copy.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &parts);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const std::time_t seconds = timegm(&parts);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(seconds);
}

}  // namespace

bool is_retryable_status(unsigned status) { return status == 408 || status == 429 || (status >= 500 && status <= 599); }

std::optional<milliseconds> parse_retry_after(std::optional<std::string_view> retry_after_ms,
                                              std::optional<std::string_view> retry_after,
                                              std::chrono::system_clock::time_point now) {
  if (retry_after_ms) {
    if (auto count = parse_number(*retry_after_ms)) return from_milliseconds(*count);
  }
  if (!retry_after) return std::nullopt;
  if (auto seconds = parse_number(*retry_after)) return from_milliseconds(*seconds * 1000.0);
  if (auto date = parse_http_date(*retry_after)) {
    if (*date <= now) return milliseconds(0);
    return std::min(std::chrono::duration_cast<milliseconds>(*date - now), milliseconds(86'400'000));
  }
  return std::nullopt;
}

milliseconds backoff_delay(const RetryPolicy& policy, std::uint32_t retry, std::optional<milliseconds> retry_after,
                           double fraction) {
  const milliseconds cap = std::max(policy.max_delay, milliseconds(0));
  if (retry_after) return std::clamp(*retry_after, milliseconds(0), cap);
  // Doubles saturate where 2^retry would overflow an integer; the cap applies anyway.
  const double ceiling = std::min(static_cast<double>(policy.base_delay.count()) * std::exp2(std::min(retry, 62u)),
                                  static_cast<double>(cap.count()));
  return milliseconds(static_cast<std::int64_t>(std::max(ceiling, 0.0) * std::clamp(fraction, 0.0, 1.0)));
}

ProviderError provider_error_from(const HttpError& error, std::string_view service, bool reply_started) {
  const std::string name(service);
  switch (error.kind()) {
    case HttpError::Kind::cancelled:
      throw boost::system::system_error(asio::error::operation_aborted);
    case HttpError::Kind::connect:
      return ProviderError(name + " could not be reached: " + error.what(), true);
    case HttpError::Kind::closed:
      return ProviderError(name + " closed the connection " + (reply_started ? "in the middle of its reply" : "before it replied") +
                               ": " + error.what(),
                           true);
    case HttpError::Kind::timeout:
      // A stream that began and then went silent is not retried: the user sees the stall
      // after the idle time instead of after several of them.
      if (reply_started) return ProviderError(name + "'s reply stalled and was given up: " + error.what(), false);
      return ProviderError(name + " did not answer in time: " + error.what(), true);
    case HttpError::Kind::tls:
      return ProviderError(name + " could not be reached securely: " + error.what(), false);
    case HttpError::Kind::protocol:
      break;
  }
  return ProviderError(name + " sent a reply that is not valid HTTP: " + error.what(), false);
}

std::string redact(std::string text, std::string_view secret) {
  if (secret.size() < 4) return text;
  for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
    text.replace(at, secret.size(), "[redacted]");
    at += std::string_view("[redacted]").size();
  }
  return text;
}

std::function<void(const std::string&)> redacted_notice(std::function<void(const std::string&)> notice,
                                                        std::string secret) {
  if (!notice) return {};
  return [notice = std::move(notice), secret = std::move(secret)](const std::string& text) { notice(redact(text, secret)); };
}

asio::awaitable<ModelResponse> complete_with_retries(RetryPolicy policy, std::string service, ModelAttempt attempt,
                                                    std::function<void(const std::string&)> on_retry) {
  std::mt19937_64 random{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  const std::uint64_t attempts_allowed = std::uint64_t{policy.max_retries} + 1;
  for (std::uint32_t attempt_number = 1;; ++attempt_number) {
    // GCC 12: no co_await inside a catch block; keep the failure and act after it.
    std::optional<ProviderError> failure;
    try {
      ModelResponse response = co_await attempt();
      co_return response;
    } catch (const ProviderError& error) {
      failure = error;
    } catch (const HttpError& error) {
      failure = provider_error_from(error, service, false);
    }
    if (!failure->retryable()) throw *failure;
    if (attempt_number >= attempts_allowed) {
      if (attempt_number == 1) throw *failure;
      throw ProviderError(service + " still failed after " + std::to_string(attempt_number) +
                              " attempts. The last failure: " + failure->what(),
                          false, failure->http_status());
    }
    const milliseconds delay = backoff_delay(policy, attempt_number - 1, failure->retry_after(), jitter(random));
    if (on_retry) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(delay.count()) / 1000.0);
      on_retry(std::string(failure->what()) + " Retrying in " + seconds + " s (attempt " +
               std::to_string(attempt_number + 1) + " of " + std::to_string(attempts_allowed) + ").");
    }
    asio::steady_timer timer(co_await asio::this_coro::executor, delay);
    co_await timer.async_wait(asio::use_awaitable);
  }
}

asio::awaitable<ModelResponse> complete_with_retries_redacting(RetryPolicy policy, std::string service,
                                                              ModelAttempt attempt,
                                                              std::function<void(const std::string&)> on_retry,
                                                              std::string secret) {
  std::optional<ProviderError> failure;
  try {
    ModelResponse response = co_await complete_with_retries(policy, std::move(service), std::move(attempt),
                                                            redacted_notice(std::move(on_retry), secret));
    co_return response;
  } catch (const ProviderError& error) {
    failure.emplace(error.reworded(redact(error.what(), secret)));
  }
  throw *failure;
}

}  // namespace deskd::model
