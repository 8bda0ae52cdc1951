// One connection of the web server: reads requests with Beast (bounded in bytes and time),
// answers them (web_http.h, the control ops through control_dispatch.h) and streams events
// as Server-Sent Events. One template for the three streams: the Unix socket, TCP and TLS.
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "base/asio_await.h"
#include "runner/control/control_service.h"
#include "runner/control/event_history.h"
#include "runner/control_protocol/control_protocol.h"
#include "runner/events/event_bus.h"
#include "runner/web/web_server_state.h"

namespace deskd::web {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace json = boost::json;
using asio::ip::tcp;
using asio::local::stream_protocol;
using TlsStream = asio::ssl::stream<tcp::socket>;

namespace {

// The largest page of kept events a replaying event stream takes from the history at a time.
constexpr std::size_t kEventReplayPageBytes = std::size_t{256} << 10;

// Whether a read ended because the client went away or the deadline closed the socket,
// rather than because it sent something that is not HTTP.
bool client_left(const boost::system::error_code& error) {
  return error == http::error::end_of_stream || error == http::error::partial_message || error == asio::error::eof ||
         error == asio::error::operation_aborted || error == asio::error::connection_reset ||
         error == asio::error::bad_descriptor || error == asio::ssl::error::stream_truncated;
}

std::string sse_event(const desk::Event& event) {
  return "id: " + event.id + "\nevent: event\ndata: " + json::serialize(desk::to_json(event)) + "\n\n";
}

template <class Stream>
class WebConnection final : public WebConnectionBase, public std::enable_shared_from_this<WebConnection<Stream>> {
 public:
  WebConnection(std::shared_ptr<WebServer::State> state, Stream stream, WebListener listener,
                std::optional<WebIdentity> unix_identity)
      : state_(std::move(state)),
        stream_(std::move(stream)),
        deadline_(state_->executor),
        listener_(listener),
        unix_identity_(std::move(unix_identity)) {}

  void close() override {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    beast::get_lowest_layer(stream_).shutdown(asio::socket_base::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close(ignored);
    deadline_.cancel();
    if (events_) events_->close();
  }
  bool closed() const override { return closed_; }

  static asio::awaitable<void> serve(std::shared_ptr<WebConnection> self) {
    co_await self->serve_requests();
    self->close();
  }

 private:
  // The socket closes when `timeout` passes before disarm(): whatever waits on it ends.
  void arm(std::chrono::milliseconds timeout) {
    deadline_.expires_after(timeout);
    deadline_.async_wait([weak = this->weak_from_this()](const boost::system::error_code& error) {
      if (error) return;  // re-armed or disarmed
      if (auto self = weak.lock()) self->close();
    });
  }
  void disarm() { deadline_.cancel(); }

  asio::awaitable<bool> write_text(const std::string& text) {
    arm(state_->settings.write_deadline);
    auto [error, written] = co_await asio::async_write(stream_, asio::buffer(text), kAwait);
    disarm();
    co_return !error && !closed_;
  }

  // Writes `response`; true when the connection may carry another request.
  asio::awaitable<bool> write_response(WebResponse response) {
    arm(state_->settings.write_deadline);
    auto [error, written] = co_await http::async_write(stream_, response, kAwait);
    disarm();
    co_return !error && !closed_ && response.keep_alive();
  }

  asio::awaitable<void> serve_requests() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      arm(state_->settings.header_deadline);
      auto [error] = co_await stream_.async_handshake(asio::ssl::stream_base::server, kAwait);
      disarm();
      if (error) co_return;
    }
    beast::flat_buffer buffer;
    bool first = true;
    while (!closed_) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(kMaximumHeaderBytes));
      parser.body_limit(kMaximumBodyBytes);
      // A kept-alive connection may wait for its next request as long as the idle timeout;
      // a new one must send its first within the header deadline.
      arm(first ? state_->settings.header_deadline : state_->settings.idle_timeout);
      first = false;
      auto [error, read] = co_await http::async_read_header(stream_, buffer, parser, kAwait);
      if (!error && !parser.is_done()) {
        if (parser.get()[http::field::expect] == "100-continue") {
          if (!co_await write_text("HTTP/1.1 100 Continue\r\n\r\n")) co_return;
        }
        arm(state_->settings.body_deadline);
        std::tie(error, read) = co_await http::async_read(stream_, buffer, parser, kAwait);
      }
      disarm();
      if (error) {
        co_await refuse_unreadable(error);
        co_return;
      }
      WebRequest request = parser.release();
      if (!co_await respond(request)) co_return;
    }
  }

  asio::awaitable<void> refuse_unreadable(const boost::system::error_code& error) {
    if (closed_) co_return;
    if (error == http::error::header_limit) {
      state_->warn("web bad request",
                   "web: refused a request whose headers were over " + std::to_string(kMaximumHeaderBytes) + " bytes");
      co_await write_response(make_error_reply(http::status::request_header_fields_too_large,
                                               "The request line and headers are over 16 KiB."));
    } else if (error == http::error::body_limit) {
      state_->warn("web bad request",
                   "web: refused a request whose body was over " + std::to_string(kMaximumBodyBytes) + " bytes");
      co_await write_response(make_error_reply(http::status::payload_too_large, "The request body is over 1 MiB."));
    } else if (!client_left(error)) {
      state_->warn("web bad request", "web: a request that is not HTTP: " + error.message());
      co_await write_response(make_error_reply(http::status::bad_request, "This is not an HTTP/1.1 request."));
    }
  }

  // Answers one request; true when the connection may carry another.
  asio::awaitable<bool> respond(WebRequest& request) {
    const std::string target(request.target());
    const std::string_view path = request_path(target);
    const auto method = request.method();
    std::optional<WebIdentity> identity = unix_identity_;
    if (!listener_.tcp && request.find(http::field::host) != request.end() &&
        !is_loopback_host(request[http::field::host])) {
      state_->warn("web foreign host", "web: refused a request on the web socket for a host that is not loopback");
      co_return co_await write_response(make_reply(request, http::status::misdirected_request,
                                                   "The web socket answers only localhost (127.0.0.1, [::1]) names: "
                                                   "forward it to a loopback port and open that.\n"));
    }
    if (listener_.tcp) {
      if (path == "/login") {
        if (method != http::verb::get) co_return co_await write_response(method_not_allowed(request, "GET"));
        co_return co_await write_response(login_reply(request, *state_->logins, listener_));
      }
      identity = identify_tcp(request, *state_->logins, state_->operator_caller);
      if (!identity) {
        // The path only: a query could hold a secret.
        state_->warn("web no login", "web: refused a request for " + std::string(path) + " without a valid login");
        WebResponse refused = make_reply(request, http::status::unauthorized,
                                         "Log in with the link `deskctl web-url` prints, or send Authorization: "
                                         "Bearer and the contents of web.token.\n");
        refused.set(http::field::www_authenticate, "Bearer realm=\"deskd\"");
        co_return co_await write_response(std::move(refused));
      }
    }
    if (path == "/api/op") {
      if (method != http::verb::post) co_return co_await write_response(method_not_allowed(request, "POST"));
      if (const std::string refusal = csrf_refusal(request, *identity, own_origin(request, listener_));
          !refusal.empty()) {
        state_->warn("web refused post", "web: refused a POST from " + identity->caller.sender + ": " + refusal);
        co_return co_await write_response(make_reply(request, http::status::forbidden, refusal + "\n"));
      }
      std::string reply = co_await answer_op(request.body(), identity->caller);
      co_return co_await write_response(make_reply(request, http::status::ok, std::move(reply), "application/json"));
    }
    if (method != http::verb::get) co_return co_await write_response(method_not_allowed(request, "GET"));
    if (path == "/" || path == "/index.html") co_return co_await write_response(asset_reply(request, "index.html"));
    if (path.starts_with("/assets/")) {
      co_return co_await write_response(asset_reply(request, path.substr(std::string_view("/assets/").size())));
    }
    if (path == "/api/session") {
      json::object session{{"csrf", identity->csrf.empty() ? json::value(nullptr) : json::value(identity->csrf)},
                           {"user", identity->caller.sender},
                           {"version", state_->settings.version}};
      co_return co_await write_response(
          make_reply(request, http::status::ok, json::serialize(session), "application/json"));
    }
    if (path == "/api/events") {
      co_await stream_events(request);
      co_return false;
    }
    if (path == "/metrics" && state_->settings.metrics) {
      co_return co_await write_response(make_reply(request, http::status::ok, state_->settings.metrics(),
                                                   "text/plain; version=0.0.4; charset=utf-8"));
    }
    co_return co_await write_response(make_reply(request, http::status::not_found, "There is no such page.\n"));
  }

  static WebResponse method_not_allowed(const WebRequest& request, std::string_view allowed) {
    WebResponse response =
        make_reply(request, http::status::method_not_allowed, "This path answers " + std::string(allowed) + " only.\n");
    response.set(http::field::allow, allowed);
    return response;
  }

  // The reply line of one control request, through the one dispatch.
  asio::awaitable<std::string> answer_op(const std::string& body, const control::ControlCaller& caller) {
    control::ParsedRequest parsed = control::parse_control_request(body);
    if (!parsed.problem &&
        (parsed.request.op == control::op::kFollow.name || parsed.request.op == control::op::kUnfollow.name ||
         parsed.request.op == control::op::kWebUrl.name)) {
      co_return control::reply_error(
          parsed.request.id, control::code::kBadRequest,
          "'" + parsed.request.op + "' is not answered on /api/op" +
              (parsed.request.op == control::op::kWebUrl.name ? std::string("; ask deskctl web-url.")
                                                              : std::string("; events stream from GET /api/events.")));
    }
    auto executor = state_->executor;
    control::ControlService& service = state_->service;
    co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(std::string)>(
        [&](auto handler) {
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          // Posted: the reply may come inside the dispatch, before the coroutine has suspended.
          control::dispatch_control_request(service, parsed, caller, [shared, executor](std::string line) {
            asio::post(executor, [shared, line = std::move(line)]() mutable { (*shared)(std::move(line)); });
          });
        },
        asio::use_awaitable);
  }

  // GET /api/events: the kept events asked for (?replay=1, Last-Event-ID), then new ones
  // as they come; the subscription drops the oldest when this client falls behind, and the
  // client is told how many.
  asio::awaitable<void> stream_events(const WebRequest& request) {
    const std::string desk_name = query_parameter(request.target(), "desk").value_or("");
    if (!desk_name.empty() && !state_->service.has_desk(desk_name)) {
      co_await write_response(make_reply(request, http::status::not_found, "There is no desk '" + desk_name + "'.\n"));
      co_return;
    }
    std::optional<std::uint64_t> after;
    const auto last_id = request.find("Last-Event-ID");
    if (last_id != request.end()) after = control::event_number(std::string(last_id->value()));
    const bool replay = query_parameter(request.target(), "replay").value_or("") == "1";
    // Subscribe before replaying, so nothing falls between the two.
    events_ = state_->service.subscribe();
    std::optional<control::EventHistory::Replay> page;
    if (after || replay) page = state_->service.replay(desk_name, after, kEventReplayPageBytes);

    http::response<http::empty_body> header{http::status::ok, request.version()};
    header.set(http::field::content_type, "text/event-stream");
    add_security_headers(header, true);
    header.keep_alive(false);
    http::response_serializer<http::empty_body> serializer{header};
    arm(state_->settings.write_deadline);
    auto [error, written] = co_await http::async_write_header(stream_, serializer, kAwait);
    disarm();
    if (error || closed_) co_return;

    std::uint64_t last = 0;
    while (page) {
      for (const auto& event : page->events) {
        last = std::max(last, control::event_number(event.id).value_or(0));
        if (!co_await write_text(sse_event(event))) co_return;
      }
      if (!page->more) break;
      page = state_->service.replay(desk_name, last, kEventReplayPageBytes);
    }
    std::uint64_t reported_drops = events_->dropped();
    const std::uint64_t drops_before = reported_drops;
    for (;;) {
      std::optional<desk::Event> event = co_await events_->next();
      if (!event || closed_) break;
      if (!desk_name.empty() && event->desk != desk_name) continue;
      if (control::event_number(event->id).value_or(0) <= last) continue;  // already replayed
      if (events_->dropped() != reported_drops) {
        reported_drops = events_->dropped();
        const std::string notice =
            "event: dropped\ndata: " + json::serialize(json::object{{"dropped", reported_drops - drops_before}}) +
            "\n\n";
        if (!co_await write_text(notice)) break;
      }
      if (!co_await write_text(sse_event(*event))) break;
    }
  }

  std::shared_ptr<WebServer::State> state_;
  Stream stream_;
  asio::steady_timer deadline_;
  WebListener listener_;
  std::optional<WebIdentity> unix_identity_;
  std::shared_ptr<desk::EventSubscription> events_;
  bool closed_ = false;
};

template <class Stream>
void start_connection(const std::shared_ptr<WebServer::State>& state, Stream stream, WebListener listener,
                      std::optional<WebIdentity> unix_identity, std::optional<uid_t> uid) {
  auto connection =
      std::make_shared<WebConnection<Stream>>(state, std::move(stream), listener, std::move(unix_identity));
  state->connections.push_back({connection, uid});
  state->serving.spawn(WebConnection<Stream>::serve(connection));
}

}  // namespace

void start_unix_connection(const std::shared_ptr<WebServer::State>& state, stream_protocol::socket socket,
                           control::ControlCaller caller, uid_t uid) {
  start_connection(state, std::move(socket), WebListener{false, false},
                   WebIdentity{std::move(caller), state->unix_csrf, false}, uid);
}

void start_tcp_connection(const std::shared_ptr<WebServer::State>& state, tcp::socket socket) {
  if (state->tls) {
    start_connection(state, TlsStream(std::move(socket), *state->tls), WebListener{true, true}, std::nullopt,
                     std::nullopt);
  } else {
    start_connection(state, std::move(socket), WebListener{true, false}, std::nullopt, std::nullopt);
  }
}

}  // namespace deskd::web
