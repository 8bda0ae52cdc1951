#include "runner/model/streamed_call.h"

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "base/ascii_text.h"
#include "runner/http/http_connection.h"

namespace deskd::model {
namespace asio = boost::asio;

namespace {

// An error body is small; a megabyte is far more than any API sends and bounds a proxy's page.
constexpr std::size_t kMaximumErrorBody = std::size_t{1} << 20;

// What a person can do about a status the API's message may not explain.
std::string advice_for(unsigned status) {
  switch (status) {
    case 401: return " Check the API key in the desk's model settings.";
    case 403: return " The API key is not allowed to use this model or endpoint.";
    case 404: return " Check the model name and the base_url.";
    case 413: return " The request is too large for the API.";
    case 429: return " The API's rate limit or quota was reached.";
    case 529: return " The API is overloaded.";
    default: return "";
  }
}

std::string with_full_stop(std::string text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
  if (!text.empty() && text.back() != '.' && text.back() != '!' && text.back() != '?') text += '.';
  return text;
}

}  // namespace

std::string body_excerpt(std::string_view body) {
  std::string excerpt;
  for (char c : body.substr(0, 300)) excerpt += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (body.size() > 300) excerpt += "...";
  return excerpt;
}

Result<Url> api_endpoint(std::string_view provider, std::string_view settings_base_url,
                         std::string_view default_base_url, std::string_view path) {
  std::string base(settings_base_url.empty() ? default_base_url : settings_base_url);
  while (!base.empty() && base.back() == '/') base.pop_back();
  Result<Url> url = Url::parse(base + std::string(path));
  if (!url.ok()) {
    return Error::make(ErrorCode::invalid_argument, "The " + std::string(provider) + " base_url \"" + base +
                                                        "\" is not a usable URL: " + url.error().what);
  }
  if (url->scheme != "https" && !(url->scheme == "http" && is_loopback_host(url->host))) {
    return Error::make(ErrorCode::refused, "The " + std::string(provider) + " base_url \"" + base +
                                               "\" must use https; plain http is allowed only to this machine (loopback).");
  }
  return url;
}

ProviderError error_for_status(const ApiDialect& dialect, unsigned status, std::string_view body,
                               std::optional<std::chrono::milliseconds> retry_after,
                               std::optional<std::string_view> should_retry, std::optional<std::string_view> request_id) {
  const std::optional<ApiFailure> failure = dialect.read_error(body);
  const std::string request_note = request_id && !request_id->empty() ? " (request id " + std::string(*request_id) + ")" : "";
  if (failure && failure->context_too_long) {
    return ProviderError("The conversation no longer fits the model's context window: " + dialect.service +
                             " answered HTTP " + std::to_string(status) + ": " + with_full_stop(failure->message) +
                             " Start a new session, or let the desk compact this one." + request_note,
                         false, status);
  }
  std::string message = dialect.service + " answered HTTP " + std::to_string(status);
  if (failure) {
    if (!failure->type.empty()) message += " (" + failure->type + ")";
    message += ": " + with_full_stop(failure->message);
  } else if (!body.empty()) {
    message += ": " + body_excerpt(body);
  } else {
    message += ".";
  }
  if (failure && failure->quota_exhausted) {
    // A 429 like a rate limit, but waiting does not refill a quota: say so, and stop.
    return ProviderError(message + " The account's quota or credit is used up (insufficient_quota): add credit or raise " +
                             "the limit with the provider; retrying cannot help." + request_note,
                         false, status);
  }
  message += advice_for(status) + request_note;
  bool retryable = is_retryable_status(status) || (failure && failure->transient);
  // Both APIs tell their own clients whether a retry can help; their word goes first.
  if (should_retry && equals_ignoring_case(*should_retry, "true")) retryable = true;
  if (should_retry && equals_ignoring_case(*should_retry, "false")) retryable = false;
  return ProviderError(message, retryable, status, retry_after);
}

ProviderError error_in_stream(std::string_view service, const ApiFailure& failure) {
  std::string message = std::string(service) + " reported an error in the middle of its reply";
  if (!failure.type.empty()) message += " (" + failure.type + ")";
  return ProviderError(message + ": " + with_full_stop(failure.message), failure.transient);
}

asio::awaitable<ModelResponse> streamed_call(HttpClient& client, HttpRequest request, const ApiDialect& dialect,
                                             StreamAssembler& assembler, std::function<void()> on_progress) {
  // GCC 12: no co_await inside a catch block, so every catch keeps the failure and the
  // code after it throws.
  const auto started = std::chrono::steady_clock::now();
  std::optional<ProviderError> failure;
  std::unique_ptr<HttpResponse> response;
  try {
    response = co_await client.send(std::move(request));
  } catch (const HttpError& error) {
    failure = provider_error_from(error, dialect.service, false);
  }
  if (failure) throw *failure;

  const unsigned status = response->status();
  if (status < 200 || status > 299) {
    std::string body;
    bool cancelled = false;
    try {
      body = co_await response->read_all(kMaximumErrorBody);
    } catch (const HttpError& error) {
      cancelled = error.kind() == HttpError::Kind::cancelled;  // else the status alone must do
    }
    if (cancelled) throw boost::system::system_error(asio::error::operation_aborted);
    const auto retry_after = parse_retry_after(response->header("retry-after-ms"), response->header("retry-after"),
                                               std::chrono::system_clock::now());
    throw error_for_status(dialect, status, body, retry_after, response->header("x-should-retry"),
                           response->header(dialect.request_id_header));
  }
  if (const auto type = response->header("content-type"); type && type->find("text/event-stream") == std::string::npos) {
    std::string body;
    try {
      body = co_await response->read_all(kMaximumErrorBody);
    } catch (const HttpError& error) {
      failure = provider_error_from(error, dialect.service, true);
    }
    if (failure) throw *failure;
    throw ProviderError(dialect.service + " answered with " + *type + " instead of a stream of events (does the server " +
                            "support streaming?): " + body_excerpt(body),
                        false, status);
  }

  ServerSentEventParser parser;
  bool body_ended = false;
  const auto call_timeout = client.settings().call_timeout;
  const auto deadline = started + call_timeout;
  while (!assembler.finished()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      throw ProviderError(dialect.service + " did not finish its reply within " + seconds_text(call_timeout) +
                              " (call_timeout_seconds); the stream kept sending without finishing, so the call was "
                              "given up.",
                          false);
    }
    std::optional<std::string> piece;
    try {
      piece = co_await response->read_some();
    } catch (const HttpError& error) {
      failure = provider_error_from(error, dialect.service, true);
    }
    if (failure) throw *failure;
    if (!piece) {
      body_ended = true;
      break;
    }
    if (Result<void> fed = parser.feed(*piece); !fed.ok()) {
      throw ProviderError(dialect.service + " sent an event stream that cannot be read: " + fed.error().what, false);
    }
    while (std::optional<ServerSentEvent> event = parser.next()) {
      if (on_progress && !event->data.empty()) on_progress();
      assembler.take(*event);
      if (assembler.finished()) break;  // anything after the closing event is not part of the reply
    }
  }
  if (body_ended && !assembler.finished()) {
    // The body ended cleanly (its length or last chunk arrived): a last event whose blank
    // line never came is whole; only a broken connection cuts a reply.
    parser.finish();
    while (std::optional<ServerSentEvent> event = parser.next()) {
      assembler.take(*event);
      if (assembler.finished()) break;
    }
  }
  // The reply is whole; reading the body to its end lets the client reuse the connection.
  // A failure now costs only that reuse, except a /stop, which still stops.
  bool cancelled = false;
  while (!body_ended && !cancelled) {
    try {
      body_ended = !(co_await response->read_some()).has_value();
    } catch (const HttpError& error) {
      cancelled = error.kind() == HttpError::Kind::cancelled;
      body_ended = true;
    }
  }
  if (cancelled) throw boost::system::system_error(asio::error::operation_aborted);
  co_return assembler.finish();
}

asio::awaitable<ModelResponse> streamed_call_for_model(HttpClient& client, HttpRequest request,
                                                       const ApiDialect& dialect, StreamAssembler& assembler,
                                                       std::function<void()> on_progress,
                                                       const std::string& configured_model) {
  ModelResponse response;
  try {
    response = co_await streamed_call(client, std::move(request), dialect, assembler, std::move(on_progress));
  } catch (ProviderError& error) {
    // A billed reply that named no model is the configured model's, as a usable one is.
    error.fill_billed_model(configured_model);
    throw;
  }
  if (response.model.empty()) response.model = configured_model;
  co_return response;
}

HttpRequest bearer_event_stream_request(const Url& url, const std::string& api_key, std::string body) {
  HttpRequest http;
  http.url = url;
  if (!api_key.empty()) http.headers.push_back({"authorization", "Bearer " + api_key});
  http.headers.push_back({"content-type", "application/json"});
  http.headers.push_back({"accept", "text/event-stream"});
  http.body = std::move(body);
  return http;
}

}  // namespace deskd::model
