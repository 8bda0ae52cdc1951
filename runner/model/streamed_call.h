#pragma once
// One streamed call to a model API, shared by the anthropic and openai providers: send the
// request, turn an error status into a ProviderError carrying the API's own message (and
// its retry-after), feed the reply's server-sent events to the provider's assembler, and
// say plainly what went wrong when the stream stalls, breaks or ends early.

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "runner/http/http_client.h"
#include "runner/http/server_sent_events.h"
#include "runner/model/model_provider.h"
#include "runner/model/retry.h"

namespace deskd::model {

/// Far beyond any max_tokens a model allows (128k tokens are about 0.5 MB of text); a
/// server that streams without end is stopped here instead of filling deskd's memory.
inline constexpr std::size_t kMaximumReplyBytes = std::size_t{32} << 20;
/// How many output items (Responses) or tool calls (Chat Completions) one reply may name:
/// an empty piece counts no bytes, so they are bounded by their number too. A reply holds a
/// few; a turn's tool calls, tens.
inline constexpr std::size_t kMaximumReplyItems = 4096;
/// A refusal's words are quoted whole, up to this much.
inline constexpr std::size_t kMaximumRefusalQuote = 2000;

/// The API's own account of a failure, read from an error body or an error event.
struct ApiFailure {
  std::string type;     ///< e.g. "invalid_request_error", "overloaded_error"; may be ""
  std::string message;  ///< the API's words
  bool transient = false;         ///< the type itself says "try again" (overloaded, server error)
  bool context_too_long = false;  ///< the conversation no longer fits the model's window
  bool quota_exhausted = false;   ///< the account's quota or credit is used up: no retry can help
};

/// Builds a reply from the events of one stream. Providers implement it; it does no I/O.
class StreamAssembler {
 public:
  virtual ~StreamAssembler() = default;
  /// Takes the next event. Throws ProviderError for an error event or a malformed event.
  virtual void take(const ServerSentEvent& event) = 0;
  /// Whether the stream's closing event (message_stop, [DONE]) has arrived.
  virtual bool finished() const = 0;
  /// The reply, once no more events will come. Throws ProviderError when the stream ended
  /// early or the reply cannot be used (a tool call cut or not valid JSON, a refusal).
  virtual ModelResponse finish() = 0;
};

/// What the shared part needs to know about one API.
struct ApiDialect {
  std::string service;            ///< "The Anthropic API", the subject of every message
  std::string request_id_header;  ///< quoted in error messages, for the provider's support
  /// The API's error in `body`, or nullopt when the body is not the API's error shape.
  std::function<std::optional<ApiFailure>(std::string_view body)> read_error;
};

/// Sends `request`, feeds each event of the reply to `assembler` and returns its reply.
/// Throws ProviderError: for an error status (with the API's message, the request id and
/// the server's retry-after; retryable per is_retryable_status, a transient error type,
/// and the x-should-retry header, never for an exhausted quota), for a reply that is not
/// an event stream, and for a stream that stalled, broke or ended early. A body that ends
/// cleanly after a last event without its closing blank line still delivers that event. Throws system_error(operation_aborted) when
/// the awaiting coroutine is cancelled.
/// `on_progress` (may be empty) is called for each event that carries data: model content,
/// not bytes, so comments or a line that never ends count as no progress. The whole call
/// ends within `client`'s call_timeout (a ProviderError naming it, not retried).
boost::asio::awaitable<ModelResponse> streamed_call(HttpClient& client, HttpRequest request, const ApiDialect& dialect,
                                                    StreamAssembler& assembler, std::function<void()> on_progress);

/// streamed_call, for a provider whose configured model is `configured_model`: a reply (or
/// a billed reply that cannot be used, a ProviderError) that names no model is that model's.
boost::asio::awaitable<ModelResponse> streamed_call_for_model(HttpClient& client, HttpRequest request,
                                                              const ApiDialect& dialect, StreamAssembler& assembler,
                                                              std::function<void()> on_progress,
                                                              const std::string& configured_model);

/// A POST of `body` (JSON) to `url` asking for an event stream, with `api_key` as a Bearer
/// token when there is one: the requests of the OpenAI APIs and those that copy them.
HttpRequest bearer_event_stream_request(const Url& url, const std::string& api_key, std::string body);

/// The ProviderError for an error status and its body (the pure part of streamed_call).
ProviderError error_for_status(const ApiDialect& dialect, unsigned status, std::string_view body,
                               std::optional<std::chrono::milliseconds> retry_after,
                               std::optional<std::string_view> should_retry, std::optional<std::string_view> request_id);

/// The ProviderError for an error reported inside a stream: retryable when transient.
ProviderError error_in_stream(std::string_view service, const ApiFailure& failure);

/// The URL of an API endpoint: `settings_base_url` (or `default_base_url` when it is
/// empty), without a trailing "/", followed by `path`. Fails with a sentence naming
/// `provider` when the URL cannot be parsed or is plain http to a host that is not loopback.
Result<Url> api_endpoint(std::string_view provider, std::string_view settings_base_url,
                         std::string_view default_base_url, std::string_view path);

/// At most the first 300 bytes of `body` on one line, for a message about a reply that is
/// not the API's error JSON (an HTML page from a proxy, say).
std::string body_excerpt(std::string_view body);

}  // namespace deskd::model
