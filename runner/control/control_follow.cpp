// A connection's follows: {"op": "follow"} answered once, then the kept events it asked
// for (a page of the history at a time), then new events as they come, each stream paced
// by the connection's queue.
#include <boost/json.hpp>

#include "runner/control/control_connection.h"
#include "runner/control/control_service.h"

namespace deskd::control {

namespace asio = boost::asio;
namespace json = boost::json;

bool Connection::following(const std::string& key, const std::shared_ptr<desk::EventSubscription>& subscription) const {
  const auto found = follows_.find(key);
  return !closed_ && found != follows_.end() && found->second.subscription == subscription;
}

void Connection::follow(const ControlRequest& request) {
  std::string key = json::serialize(request.id);
  if (follows_.contains(key)) {
    send(reply_error(request.id, code::kBadRequest, "A follow with this id is already running on this connection."));
    return;
  }
  std::optional<std::uint64_t> after;
  if (request.from) {
    after = event_number(*request.from);
    if (!after) {
      send(reply_error(request.id, code::kBadRequest, "'from' must be an event id such as e-42."));
      return;
    }
  }
  std::string desk_name = request.desk.value_or("");
  // Subscribe before replaying, so nothing falls between the two.
  auto subscription = context_->service.subscribe();
  follows_[key] = Follow{request.id, subscription, desk_name};
  std::optional<EventHistory::Replay> first_page;
  if (after || request.replay) first_page = context_->service.replay(desk_name, after, kReplayPageBytes);
  send(reply_ok(request.id, {{"following", desk_name.empty() ? json::value(nullptr) : json::value(desk_name)},
                             {"replay_complete", first_page ? first_page->complete : true}}));
  asio::co_spawn(socket_.get_executor(),
                 stream(shared_from_this(), std::move(key), request.id, std::move(subscription), std::move(desk_name),
                        std::move(first_page)),
                 [context = context_](std::exception_ptr escaped) { report_escape(escaped, *context); });
}

asio::awaitable<void> Connection::stream(std::shared_ptr<Connection> self, std::string key, json::value id,
                                         std::shared_ptr<desk::EventSubscription> subscription, std::string desk_name,
                                         std::optional<EventHistory::Replay> page) {
  std::uint64_t last = 0;  // the newest event sent; live events up to it were replayed
  std::uint64_t reported_drops = 0;
  if (page) {
    // A page at a time, each event paced by the queue: a follower that replays the whole
    // history holds one page of it, not a copy of all of it.
    std::size_t replayed = 0;
    for (;;) {
      for (const auto& event : page->events) {
        last = std::max(last, event_number(event.id).value_or(0));
        self->send(reply_event(id, desk::to_json(event)));
        ++replayed;
        co_await self->wait_writable();
        if (!self->following(key, subscription)) co_return;
      }
      if (!page->more) break;
      page = self->context_->service.replay(desk_name, last, kReplayPageBytes);
    }
    page.reset();
    // Tells a client that only wanted the kept events where they end.
    self->send(json::serialize(json::object{{"id", id}, {"replayed", replayed}}));
    // Events the subscription dropped meanwhile were older than the history's end, which
    // the replay reached: nothing was lost.
    reported_drops = subscription->dropped();
  }
  const std::uint64_t drops_before = reported_drops;
  for (;;) {
    std::optional<desk::Event> event = co_await subscription->next();
    if (!event || !self->following(key, subscription)) break;
    if (!desk_name.empty() && event->desk != desk_name) continue;
    if (event_number(event->id).value_or(0) <= last) continue;  // already replayed
    if (subscription->dropped() != reported_drops) {
      reported_drops = subscription->dropped();
      self->send(json::serialize(json::object{{"id", id}, {"dropped", reported_drops - drops_before}}));
    }
    self->send(reply_event(id, desk::to_json(*event)));
    co_await self->wait_writable();
  }
}

void Connection::unfollow(const ControlRequest& request) {
  auto found = follows_.find(json::serialize(*request.follow));
  if (found == follows_.end()) {
    send(reply_error(request.id, code::kNotFound, "No follow with that id runs on this connection."));
    return;
  }
  found->second.subscription->close();
  follows_.erase(found);
  send(reply_ok(request.id));
}

void Connection::end_follows() {
  for (auto& [key, follow] : follows_) follow.subscription->close();
  follows_.clear();
}

// The ids first: a send can find the client too slow, which ends its follows.
std::vector<json::value> Connection::follow_ids() const {
  std::vector<json::value> ids;
  for (const auto& [key, follow] : follows_) ids.push_back(follow.id);
  return ids;
}

void Connection::tell_follows_stopping(const std::string& notice) {
  for (const auto& id : follow_ids()) {
    send(json::serialize(json::object{{"id", id}, {"stopping", true}, {"notice", notice}}));
  }
}

void Connection::end_for_stop(const std::string& message) {
  // What the bus published before the stop but the follow's stream has not taken yet (a
  // busy loop lags behind) goes out before the final line: a follow is told to the end.
  std::vector<std::pair<json::value, desk::Event>> pending;
  for (auto& [key, follow] : follows_) {
    while (auto event = follow.subscription->try_next()) {
      if (follow.desk.empty() || event->desk == follow.desk) pending.emplace_back(follow.id, std::move(*event));
    }
  }
  for (const auto& [id, event] : pending) send(reply_event(id, desk::to_json(event)));
  for (const auto& id : follow_ids()) send(reply_error(id, code::kStopping, message));
  end_follows();
  finish_then_close();
}

}  // namespace deskd::control
