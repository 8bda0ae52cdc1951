#include "runner/desk/session_keeper.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"
#include "base/random_id.h"
#include "base/unique_fd.h"
#include "runner/desk/file_saver.h"
#include "runner/events/india_time.h"

namespace deskd::desk {
namespace json = boost::json;
namespace {

std::string random_suffix() { return random_hex(3); }

json::object to_json(const Session& session) {
  return {{"id", session.id}, {"india_date", session.india_date}, {"summary", session.summary},
          {"transcript", session.transcript}};
}

Result<Session> session_from_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  boost::system::error_code error;
  json::value value = json::parse(text.str(), error);
  const json::object* object = error ? nullptr : value.if_object();
  if (object == nullptr) {
    return Error::make(ErrorCode::invalid_argument, "The saved session " + path.native() + " is not a JSON object.");
  }
  Session session;
  const auto text_of = [&](const char* key) -> const json::string* {
    const json::value* field = object->if_contains(key);
    return field != nullptr ? field->if_string() : nullptr;
  };
  const json::string* id = text_of("id");
  const json::string* date = text_of("india_date");
  if (id == nullptr || date == nullptr) {
    return Error::make(ErrorCode::invalid_argument, "The saved session " + path.native() + " has no id or date.");
  }
  session.id = std::string(*id);
  session.india_date = std::string(*date);
  if (const json::string* summary = text_of("summary")) session.summary = std::string(*summary);
  if (const json::value* transcript = object->if_contains("transcript"); transcript && transcript->is_array()) {
    session.transcript = transcript->as_array();
  }
  return session;
}

}  // namespace

SessionKeeper::SessionKeeper(std::filesystem::path folder, const Clock& clock)
    : folder_(std::move(folder)), clock_(clock) {}

Session SessionKeeper::new_session(std::string summary) const {
  const IndiaDate today = india_date(clock_.now());
  std::string compact = iso_date(today);
  std::erase(compact, '-');
  return Session{"s-" + compact + "-" + random_suffix(), iso_date(today), std::move(summary), {}};
}

Result<void> SessionKeeper::save() const {
  return write_file_atomically(folder_ / "current.json", json::serialize(to_json(session_)), "the session");
}

Result<void> SessionKeeper::start(TurnRunner& runner) {
  std::error_code error;
  std::filesystem::create_directories(folder_ / "archive", error);
  if (error) return Error::make(ErrorCode::system, "Creating the session folder " + folder_.native() + " failed: " + error.message() + ".");
  // A new session holds nothing yet (no summary, no transcript): it is saved with its first
  // turn. Saving it here made every desk's start two fsyncs, on the event loop.
  const auto current = folder_ / "current.json";
  if (std::filesystem::exists(current)) {
    auto loaded = session_from_file(current);
    if (!loaded.ok()) {
      // A damaged session is kept aside for a person to look at; the desk starts afresh.
      std::filesystem::rename(current, folder_ / "archive" / ("damaged-" + random_suffix() + ".json"), error);
      session_ = new_session("");
    } else {
      session_ = std::move(loaded).value();
    }
  } else {
    session_ = new_session("");
  }
  runner.resume_session(session_);
  return success();
}

bool SessionKeeper::needs_rollover() const {
  return !session_.india_date.empty() && session_.india_date != iso_date(india_date(clock_.now()));
}

boost::asio::awaitable<std::string> SessionKeeper::roll_over(TurnRunner& runner) {
  std::string summary = co_await runner.summarise();
  const auto archived = folder_ / "archive" / (session_.id + ".json");
  if (auto saved = write_file_atomically(archived, json::serialize(to_json(session_)), "the archived session");
      !saved.ok()) {
    throw std::runtime_error(saved.error().what);
  }
  session_ = new_session(std::move(summary));
  if (auto saved = save(); !saved.ok()) throw std::runtime_error(saved.error().what);
  runner.resume_session(session_);
  co_return session_.id;
}

boost::asio::awaitable<Result<void>> SessionKeeper::save_transcript(boost::json::array transcript) {
  session_.transcript = std::move(transcript);
  co_return co_await save_file_off_loop(folder_ / "current.json", json::serialize(to_json(session_)), "the session");
}

}  // namespace deskd::desk
