// The STATUS= line `systemctl status deskd` shows: desks running, and why others are not.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runner/daemon/service_status.h"

namespace deskd::app {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ServiceStatusTest, CountsTheDesksRunningAndThoseStillStarting) {
  EXPECT_EQ(service_status_line(2, 2, 0, {}), "2 of 2 desks running");
  EXPECT_EQ(service_status_line(3, 10, 7, {}), "starting: 3 of 10 desks running, 7 starting");
}

TEST(ServiceStatusTest, NamesEachDeskKeptStoppedWithItsReason) {
  const std::vector<StoppedDesk> stopped = {{"beta", "starting the sandbox failed: mount a new /proc failed"}};
  EXPECT_EQ(service_status_line(1, 2, 0, stopped),
            "1 of 2 desks running; kept stopped: beta: starting the sandbox failed: mount a new /proc failed");
}

TEST(ServiceStatusTest, AReasonStaysOnOneShortLine) {
  // A newline would end STATUS= and begin another sd_notify assignment.
  const std::string reason = "the config has 2 problems:\nREADY=1\n" + std::string(200, 'x') + " tail";
  const std::string line = service_status_line(0, 1, 0, std::vector<StoppedDesk>{{"beta", reason}});
  EXPECT_THAT(line, Not(HasSubstr("\n")));
  EXPECT_THAT(line, HasSubstr("beta: the config has 2 problems: READY=1 xxx"));
  EXPECT_LE(line.size(), std::string("0 of 1 desks running; kept stopped: beta: ").size() + 83);
  EXPECT_TRUE(line.ends_with("...")) << line;
}

TEST(ServiceStatusTest, ACutNeverSplitsACharacter) {
  std::string reason;
  for (int index = 0; index < 60; ++index) reason += "é";  // two bytes each, no space to cut at
  const std::string line = service_status_line(0, 1, 0, std::vector<StoppedDesk>{{"beta", reason}});
  const std::string shown = line.substr(line.find("beta: ") + 6);
  ASSERT_TRUE(shown.ends_with("...")) << line;
  EXPECT_EQ((shown.size() - 3) % 2, 0u) << line;
}

TEST(ServiceStatusTest, NamesThreeDesksAndCountsTheRest) {
  std::vector<StoppedDesk> stopped;
  for (const char* name : {"a", "b", "c", "d", "e"}) stopped.push_back({name, "why"});
  EXPECT_EQ(service_status_line(1, 6, 0, stopped),
            "1 of 6 desks running; kept stopped: a: why; b: why; c: why; and 2 more");
  EXPECT_EQ(service_status_line(0, 1, 0, std::vector<StoppedDesk>{{"a", ""}}),
            "0 of 1 desks running; kept stopped: a: no reason given");
}

}  // namespace
}  // namespace deskd::app
