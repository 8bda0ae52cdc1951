#pragma once
// What the config tests share: a fresh folder with two desks and the files a config names,
// and readers of what parsing found.

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "runner/config/config.h"

namespace deskd::app::testing {

namespace fs = std::filesystem;
using ::testing::IsEmpty;

// Two desks, a script, a holiday list and a skills folder under a fresh /var/tmp folder;
// the config itself is parsed from a string as if it were <root>/deskd.toml.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-config-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
    for (const char* desk : {"desks/alpha", "desks/beta"}) {
      fs::create_directories(root_ / desk / "memory");
      fs::create_directories(root_ / desk / "notes");
      fs::create_directories(root_ / desk / "scratch");
      write(std::string(desk) + "/Memory.md", "# Memory\n");
    }
    fs::create_directories(root_ / "skills");
    write("replies.jsonl", "{\"text\": \"hello\"}\n");
    write("holidays.txt", "2026-01-26 Republic Day\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) const {
    std::ofstream(root_ / relative) << text;
  }
  fs::path file() const { return root_ / "deskd.toml"; }
  ConfigLoad parse(std::string_view text) const { return parse_config(text, file()); }

  // Each problem as "line:column: message", the file name checked and left out.
  std::vector<std::string> problems(const ConfigLoad& load) const {
    std::vector<std::string> lines;
    for (const auto& problem : load.problems) {
      EXPECT_EQ(problem.position.file, file());
      lines.push_back(std::to_string(problem.position.line) + ":" + std::to_string(problem.position.column) + ": " +
                      problem.message);
    }
    return lines;
  }
  // The config of `text`, which must have no problem.
  Config valid(std::string_view text) const {
    auto load = parse(text);
    EXPECT_THAT(problems(load), IsEmpty());
    return load.config.value_or(Config{});
  }

  fs::path root_;
};

inline constexpr const char* kAlpha = "[[desk]]\nname = \"alpha\"\ndirectory = \"desks/alpha\"\n";

}  // namespace deskd::app::testing
