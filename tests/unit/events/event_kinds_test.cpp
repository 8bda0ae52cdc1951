// The one table of event kinds (runner/events/event_kinds.h): every row is journaled or says
// why not, its deskctl text is a well-formed template, and the code publishes no kind
// outside the table — each publish names its kind by a constant the table generates.

#include "runner/events/event_kinds.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

namespace deskd::desk {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::filesystem::path> runner_sources() {
  std::vector<std::filesystem::path> sources;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::filesystem::path(DESKD_SOURCE_DIR) / "runner")) {
    const auto extension = entry.path().extension();
    if (entry.is_regular_file() && (extension == ".cpp" || extension == ".h")) sources.push_back(entry.path());
  }
  return sources;
}

// The line without its // comment (one outside a string literal).
std::string without_comment(const std::string& line) {
  bool in_string = false;
  for (std::size_t index = 0; index + 1 < line.size(); ++index) {
    if (line[index] == '\\') {
      ++index;
    } else if (line[index] == '"') {
      in_string = !in_string;
    } else if (!in_string && line[index] == '/' && line[index + 1] == '/') {
      return line.substr(0, index);
    }
  }
  return line;
}

TEST(EventKindsTest, EveryKindIsJournaledOrSaysWhyNot) {
  std::set<std::string_view> names;
  ASSERT_FALSE(event_kinds().empty());
  for (const EventKindInfo& row : event_kinds()) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_TRUE(names.insert(row.name).second) << "listed twice";
    EXPECT_TRUE(std::regex_match(std::string(row.name), std::regex("[A-Z]+(_[A-Z]+)*")));
    if (row.journaling == Journaling::nobody) {
      EXPECT_FALSE(row.why_not_journaled.empty()) << "a kind nobody journals must say why";
    } else {
      EXPECT_TRUE(row.why_not_journaled.empty()) << "a journaled kind has no reason not to be";
    }
  }
}

TEST(EventKindsTest, TheKindsOnceLeftOutAreJournaled) {
  for (const char* kind : {event_kind::kSteeringQueued, event_kind::kSteeringDelivered}) {
    EXPECT_EQ(journaling_of(kind), Journaling::desk) << kind;
  }
  EXPECT_EQ(journaling_of(event_kind::kScheduleStateNotSaved), Journaling::daemon);
  EXPECT_EQ(journaling_of(event_kind::kTriggerAccepted), Journaling::submit);
  EXPECT_EQ(journaling_of("NOT_A_KIND"), Journaling::nobody);
  EXPECT_FALSE(find_event_kind("NOT_A_KIND").has_value());
}

// The "ends turn" column: the kinds every waiter (deskctl ask, deskd run, the journal's
// scan) stops at, and a failed rollover's TURN_FAILED, which ends nothing.
TEST(EventKindsTest, TheKindsThatEndATurn) {
  std::set<std::string_view> ending;
  for (const EventKindInfo& row : event_kinds()) {
    if (row.ends_turn != TurnEnd::no) ending.insert(row.name);
  }
  EXPECT_EQ(ending,
            (std::set<std::string_view>{event_kind::kTurnFinished, event_kind::kTurnFailed, event_kind::kTurnStopped,
                                        event_kind::kCommandAnswered, event_kind::kTriggerFinished,
                                        event_kind::kBudgetReached}));
  const boost::json::object plain{{"trigger", "t-1"}};
  EXPECT_TRUE(ends_turn(event_kind::kTurnFinished, plain));
  EXPECT_TRUE(ends_turn(event_kind::kTurnFailed, plain));
  EXPECT_TRUE(ends_turn(event_kind::kBudgetReached, plain));  // a spend cap ends the turn, or answers the trigger
  EXPECT_FALSE(ends_turn(event_kind::kTurnFailed, {{"trigger", "t-1"}, {"rollover", true}}));
  EXPECT_TRUE(ends_turn(event_kind::kTurnStopped, {{"trigger", "t-1"}, {"reason", "the desk stopped"}}));
  EXPECT_FALSE(ends_turn(event_kind::kTurnStarted, plain));
  EXPECT_FALSE(ends_turn(event_kind::kDeskStopped, plain));
  EXPECT_FALSE(ends_turn("NOT_A_KIND", plain));
  EXPECT_EQ(turn_end_of(event_kind::kTurnFailed), TurnEnd::unless_rollover);
  EXPECT_EQ(turn_end_of("NOT_A_KIND"), TurnEnd::no);
}

TEST(EventKindsTest, EveryTextIsAWellFormedTemplate) {
  const std::regex placeholder(R"(\{([a-z0-9_]+)(:(short|prose|path|lines [0-9]+|if [^}]*|given [^}]*))?\})");
  for (const EventKindInfo& row : event_kinds()) {
    SCOPED_TRACE(std::string(row.name));
    // What is left once every placeholder is taken out holds no brace.
    const std::string rest = std::regex_replace(std::string(row.text), placeholder, "");
    EXPECT_EQ(rest.find_first_of("{}"), std::string::npos) << row.text;
  }
}

// Every publish in runner/ names its kind by a table constant (event_kind::k...), or
// forwards a `kind` it was given; no kind is spelled as a string anywhere but the table.
TEST(EventKindsTest, TheCodePublishesOnlyKindsOfTheTable) {
  // Built once, and tried only on lines that can match: std::regex is slow (23 s under ASan
  // when this scan built and ran them on every line).
  const std::regex call(R"(publish\(([^;{]*))");
  const std::regex literal("\"([A-Z]+(_[A-Z]+)+)\"");
  std::set<std::string> table_names;
  for (const EventKindInfo& row : event_kinds()) table_names.insert(std::string(row.name));
  std::size_t calls = 0;
  for (const auto& path : runner_sources()) {
    const std::string text = read_text(path);
    const bool is_table = path.filename() == "event_kinds.h";
    std::istringstream lines(text);
    std::string line;
    std::size_t number = 0;
    while (std::getline(lines, line)) {
      ++number;
      const std::string where = path.string() + ":" + std::to_string(number);
      line = without_comment(line);
      if (line.find("publish(") == std::string::npos && line.find('"') == std::string::npos) continue;
      for (std::sregex_iterator match(line.begin(), line.end(), call), end; match != end; ++match) {
        const std::string arguments = (*match)[1];
        if (arguments.empty() || arguments.starts_with(")")) continue;  // "publish()" in prose
        const bool declares = std::regex_search(arguments, std::regex(R"((string|char\*?)&? kind)"));
        const bool forwards = std::regex_search(arguments, std::regex(R"((^|, )kind(\.c_str\(\))?[,)])"));
        const bool names_constant = arguments.find("event_kind::k") != std::string::npos;
        EXPECT_TRUE(declares || forwards || names_constant) << where << ": " << line;
        if (names_constant) ++calls;
      }
      if (is_table) continue;
      for (std::sregex_iterator match(line.begin(), line.end(), literal), end; match != end; ++match) {
        EXPECT_EQ(table_names.count((*match)[1]), 0u)
            << where << ": the kind " << (*match)[1] << " is spelled outside the table";
      }
    }
  }
  EXPECT_GT(calls, 20u);  // the scan found the publishes at all
}

}  // namespace
}  // namespace deskd::desk
