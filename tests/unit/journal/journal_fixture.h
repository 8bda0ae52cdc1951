#pragma once
// The journal tests' fixture: a journal path in a fresh folder, a bus with a manual clock
// to number events, and readers of what the file holds.

#include <stdlib.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runner/events/event_bus.h"
#include "runner/journal/journal.h"

namespace deskd::desk::testing {

namespace fs = std::filesystem;
namespace json = boost::json;

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-journal-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    path_ = root_ / "desks" / "alpha" / "journal.jsonl";
  }
  void TearDown() override { fs::remove_all(root_); }

  Trigger trigger(const std::string& text) {
    return Trigger{.id = make_trigger_id(), .desk = "alpha", .source = Trigger::Source::user, .text = text,
                   .sender = "asha", .schedule = "",
                   .received = clock_.now() + std::chrono::microseconds(++count_)};
  }
  Event accepted(const Trigger& trigger) {
    return bus_.publish("alpha", event_kind::kTriggerAccepted, to_json(trigger));
  }
  Event finished(const Trigger& trigger) {
    return bus_.publish("alpha", event_kind::kTriggerFinished, {{"trigger", trigger.id}});
  }
  Event of(const Trigger& trigger, const char* kind, json::object data = {}) {
    data["trigger"] = trigger.id;
    return bus_.publish("alpha", kind, std::move(data));
  }
  void append_all(Journal& journal, std::initializer_list<Event> events) {
    for (const Event& event : events) ASSERT_TRUE(journal.append(event).ok());
  }
  std::vector<Trigger> unfinished(std::size_t* skipped = nullptr) {
    auto scan = Journal::read(path_);
    EXPECT_TRUE(scan.ok()) << scan.error().what;
    if (skipped != nullptr) *skipped = scan->damaged_count();
    std::vector<Trigger> triggers;
    for (const OpenTrigger& open : scan->open_triggers()) triggers.push_back(open.trigger);
    return triggers;
  }
  std::vector<std::string> unfinished_texts(std::size_t* skipped = nullptr) {
    std::vector<std::string> texts;
    for (const Trigger& each : unfinished(skipped)) texts.push_back(each.text);
    return texts;
  }
  std::vector<std::string> lines() {
    std::ifstream file(path_);
    std::vector<std::string> result;
    for (std::string line; std::getline(file, line);) result.push_back(line);
    return result;
  }
  void write_raw(const std::string& text) {
    std::ofstream file(path_, std::ios::app | std::ios::binary);
    file << text;
  }

  fs::path root_;
  fs::path path_;
  ManualClock clock_{std::chrono::sys_days{std::chrono::November / 30 / 2026}};
  EventBus bus_{clock_};
  int count_ = 0;
};

}  // namespace deskd::desk::testing
