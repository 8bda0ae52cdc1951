// deskd's log under journald: the priority of each level, the fields of one entry (one
// MESSAGE however many lines, DESK= and TRIGGER= only when known), and the choice between
// the journal and plain stderr lines, made from $JOURNAL_STREAM and fd 2 as systemd means.

#include "runner/daemon/journal_entry.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "runner/daemon/deskd_log.h"

namespace deskd::app {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(JournalEntryTest, EachLevelHasItsSyslogPriority) {
  EXPECT_EQ(journal_priority(LogLevel::error), LOG_ERR);
  EXPECT_EQ(journal_priority(LogLevel::warn), LOG_WARNING);
  EXPECT_EQ(journal_priority(LogLevel::info), LOG_INFO);
  EXPECT_EQ(journal_priority(LogLevel::debug), LOG_DEBUG);
  EXPECT_EQ(journal_priority(LogLevel::trace), LOG_DEBUG);
}

TEST(JournalEntryTest, TheConfigsLevelNamesAreKnown) {
  EXPECT_EQ(log_level_named("trace"), LogLevel::trace);
  EXPECT_EQ(log_level_named("debug"), LogLevel::debug);
  EXPECT_EQ(log_level_named("info"), LogLevel::info);
  EXPECT_EQ(log_level_named("warn"), LogLevel::warn);
  EXPECT_EQ(log_level_named("error"), LogLevel::error);
  EXPECT_FALSE(log_level_named("warning").has_value());
  EXPECT_FALSE(log_level_named("").has_value());
}

TEST(JournalEntryTest, AMessageAboutADeskAndATriggerCarriesBoth) {
  EXPECT_THAT(journal_fields(LogLevel::warn, "nifty: TURN_FAILED t-1: the model timed out", {"nifty", "t-1"}),
              ElementsAre("MESSAGE=nifty: TURN_FAILED t-1: the model timed out", "PRIORITY=4",
                          "SYSLOG_IDENTIFIER=deskd", "DESK=nifty", "TRIGGER=t-1"));
}

TEST(JournalEntryTest, FieldsNotKnownAreLeftOut) {
  EXPECT_THAT(journal_fields(LogLevel::info, "deskd stopped", {}),
              ElementsAre("MESSAGE=deskd stopped", "PRIORITY=6", "SYSLOG_IDENTIFIER=deskd"));
  EXPECT_THAT(journal_fields(LogLevel::error, "desk beta is kept stopped: no folder", about_desk("beta")),
              ElementsAre("MESSAGE=desk beta is kept stopped: no folder", "PRIORITY=3", "SYSLOG_IDENTIFIER=deskd",
                          "DESK=beta"));
}

TEST(JournalEntryTest, AMessageOfManyLinesIsOneField) {
  const auto entry = journal_fields(LogLevel::error, "reload refused: 2 problems:\nfirst\nsecond", {});
  ASSERT_EQ(entry.size(), 3u);
  EXPECT_EQ(entry[0], "MESSAGE=reload refused: 2 problems:\nfirst\nsecond");
}

struct stat stat_of(int fd) {
  struct stat found {};
  EXPECT_EQ(::fstat(fd, &found), 0);
  return found;
}

TEST(JournalEntryTest, TheStreamIsJournaldsOnlyWhenDeviceAndInodeMatch) {
  const struct stat stream = stat_of(STDIN_FILENO);
  const std::string same = std::to_string(stream.st_dev) + ":" + std::to_string(stream.st_ino);
  EXPECT_TRUE(is_journal_stream(same.c_str(), stream));
  const std::string other_inode = std::to_string(stream.st_dev) + ":" + std::to_string(stream.st_ino + 1);
  EXPECT_FALSE(is_journal_stream(other_inode.c_str(), stream));
  const std::string other_device = std::to_string(stream.st_dev + 1) + ":" + std::to_string(stream.st_ino);
  EXPECT_FALSE(is_journal_stream(other_device.c_str(), stream));
  EXPECT_FALSE(is_journal_stream(nullptr, stream));
  for (const std::string& malformed : {std::string(""), std::string(":"), same + "x", " " + same, same + ":1",
                                       std::to_string(stream.st_dev), "-1:" + std::to_string(stream.st_ino)}) {
    EXPECT_FALSE(is_journal_stream(malformed.c_str(), stream)) << malformed;
  }
}

// Puts a file of its own on fd 2 for the test's length and gives the old stderr back.
class StderrToFile {
 public:
  StderrToFile() {
    char pattern[] = "/tmp/deskd-journal-entry-test-XXXXXX";
    const int file = ::mkstemp(pattern);
    EXPECT_GE(file, 0);
    path_ = pattern;
    saved_ = ::dup(STDERR_FILENO);
    ::dup2(file, STDERR_FILENO);
    ::close(file);
  }
  ~StderrToFile() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::unlink(path_.c_str());
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

// Sets an environment variable for the test's length.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const std::string& value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DeskdLogTest, AStderrThatIsJournaldsStreamSendsToTheJournal) {
  const StderrToFile redirected;
  const struct stat stream = stat_of(STDERR_FILENO);
  const ScopedVariable journal_stream("JOURNAL_STREAM",
                                      std::to_string(stream.st_dev) + ":" + std::to_string(stream.st_ino));
  EXPECT_TRUE(DeskdLog::open(LogLevel::info)->to_journal());
}

TEST(DeskdLogTest, AnInheritedVariableForAnotherStreamKeepsPlainLines) {
  const StderrToFile redirected;
  const struct stat stream = stat_of(STDERR_FILENO);
  const ScopedVariable journal_stream("JOURNAL_STREAM",
                                      std::to_string(stream.st_dev) + ":" + std::to_string(stream.st_ino + 1));
  const auto log = DeskdLog::open(LogLevel::info);
  EXPECT_FALSE(log->to_journal());
  log->warn("desk beta: first line\nsecond line", about_desk("beta"));
  log->debug("below the threshold");
  const std::string written = redirected.text();
  EXPECT_THAT(written, HasSubstr("warning: desk beta: first line\nsecond line\n"));
  EXPECT_THAT(written, ::testing::Not(HasSubstr("below the threshold")));
}

}  // namespace
}  // namespace deskd::app
