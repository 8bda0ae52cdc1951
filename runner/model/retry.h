#pragma once
// Retries for the HTTP model providers. A call is retried when the failure is one that
// passes by itself: HTTP 408, 429, 500-599 (529 is Anthropic's "overloaded"), an
// overloaded or internal error reported inside a stream, a refused or dropped connection,
// and a timeout before the reply began. It is never retried when waiting cannot help:
// another 4xx (a bad request, a bad key, an unknown model, a too long conversation), a
// refusal, a malformed reply, a /stop, or a stream that stalled after it began (the turn
// ends with a visible error after the idle time instead of stalling again and again).
//
// Waits use exponential backoff with full jitter (uniform in [0, base_delay * 2^n], capped
// at max_delay) unless the server says how long to wait (retry-after-ms, retry-after in
// seconds or as an HTTP date; also capped at max_delay). A wait is an asio timer, so a
// /stop ends it at once.

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runner/http/http_client.h"
#include "runner/model/model_provider.h"
#include "runner/model/provider_settings.h"

namespace deskd::model {

/// What a reply that cannot be used still cost: the server answered whole, counted its
/// tokens and bills them (a refusal, a reply cut inside a tool call, a tool call whose
/// arguments are not JSON). Both APIs send usage with such a reply.
struct BilledReply {
  desk::Usage usage;
  bool usage_reported = false;  ///< false: the server sent no counts (usage unknown, not zero)
  std::string model;            ///< the model that answered ("" until the provider fills it in)
};

/// A failed model call: a sentence a person can act on, the HTTP status when the server
/// answered, whether trying again may help, and how long the server asked us to wait. A
/// reply that arrived whole but cannot be used also carries what it cost (billed()), and a
/// refusal says so (refused()): the turn runner counts the one and takes the refused
/// message out of the session for the other.
class ProviderError : public std::runtime_error {
 public:
  ProviderError(const std::string& message, bool retryable, std::optional<unsigned> http_status = std::nullopt,
                std::optional<std::chrono::milliseconds> retry_after = std::nullopt)
      : std::runtime_error(message), retryable_(retryable), http_status_(http_status), retry_after_(retry_after) {}

  /// A reply that arrived whole and cannot be used: never retried (the model would most
  /// likely answer the same, and each try is billed).
  static ProviderError unusable_reply(const std::string& message, BilledReply billed, bool refusal) {
    ProviderError error(message, false);
    error.billed_ = std::move(billed);
    error.refused_ = refusal;
    return error;
  }

  bool retryable() const { return retryable_; }
  std::optional<unsigned> http_status() const { return http_status_; }
  std::optional<std::chrono::milliseconds> retry_after() const { return retry_after_; }
  const std::optional<BilledReply>& billed() const { return billed_; }
  /// The model refused to answer (Anthropic's stop_reason "refusal"; OpenAI's refusal
  /// content or content filter).
  bool refused() const { return refused_; }

  /// The same failure told in other words (a secret redacted, a sentence added).
  ProviderError reworded(const std::string& message) const {
    ProviderError copy(message, retryable_, http_status_, retry_after_);
    copy.billed_ = billed_;
    copy.refused_ = refused_;
    return copy;
  }
  /// Names the model of the billed reply when the stream did not.
  void fill_billed_model(const std::string& model) {
    if (billed_ && billed_->model.empty()) billed_->model = model;
  }

 private:
  bool retryable_;
  std::optional<unsigned> http_status_;
  std::optional<std::chrono::milliseconds> retry_after_;
  std::optional<BilledReply> billed_;
  bool refused_ = false;
};

/// Whether an HTTP status is worth another try: 408, 429, 500-599 (which holds 529).
bool is_retryable_status(unsigned status);

/// How long the server asked us to wait, from a `retry-after-ms` value (milliseconds, may
/// be fractional) or else a `retry-after` value (seconds, or an HTTP date measured from
/// `now`). nullopt when neither is present or readable; a date in the past gives zero.
std::optional<std::chrono::milliseconds> parse_retry_after(std::optional<std::string_view> retry_after_ms,
                                                           std::optional<std::string_view> retry_after,
                                                           std::chrono::system_clock::time_point now);

/// The wait before retry number `retry` (0 for the first retry): the server's
/// `retry_after` if it gave one, else `fraction` (in [0, 1], the jitter) of
/// base_delay * 2^retry; either way at most max_delay.
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, std::uint32_t retry,
                                        std::optional<std::chrono::milliseconds> retry_after, double fraction);

/// The ProviderError for a failed HTTP exchange with `service` ("The Anthropic API"):
/// `reply_started` tells whether the reply's status had arrived (a timeout then is a
/// stalled stream, not retried). A cancelled exchange (a /stop) is not an error of the
/// provider: this throws boost::system::system_error(operation_aborted) for it, the way
/// every cancelled asio operation reports itself.
ProviderError provider_error_from(const HttpError& error, std::string_view service, bool reply_started);

/// `text` with every occurrence of `secret` replaced by "[redacted]" (secrets shorter
/// than 4 characters are left alone: they would mangle ordinary words).
std::string redact(std::string text, std::string_view secret);

/// `notice` (may be empty) with `secret` redacted from every sentence it is given.
std::function<void(const std::string&)> redacted_notice(std::function<void(const std::string&)> notice,
                                                        std::string secret);

/// One try at a model call; throws ProviderError (or HttpError) when it fails.
using ModelAttempt = std::function<boost::asio::awaitable<ModelResponse>()>;

/// Runs `attempt` until it succeeds, fails in a way a retry cannot help (that error is
/// thrown as is), or policy.max_retries retries have failed too (then the ProviderError
/// says "`service` still failed after N attempts" and the last reason). Cancellation of
/// the awaiting coroutine ends a wait at once with system_error(operation_aborted).
/// `on_retry` (may be empty) hears each failure that will be retried, as a sentence
/// ("... Retrying in 1.5 s (attempt 2 of 5).").
boost::asio::awaitable<ModelResponse> complete_with_retries(RetryPolicy policy, std::string service,
                                                            ModelAttempt attempt,
                                                            std::function<void(const std::string&)> on_retry = {});

/// complete_with_retries for a provider holding `secret` (its API key): the secret is
/// redacted from every retry notice and from the error finally thrown, since an API's own
/// messages may quote what it was sent.
boost::asio::awaitable<ModelResponse> complete_with_retries_redacting(RetryPolicy policy, std::string service,
                                                                     ModelAttempt attempt,
                                                                     std::function<void(const std::string&)> on_retry,
                                                                     std::string secret);

}  // namespace deskd::model
