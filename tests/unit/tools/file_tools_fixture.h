#pragma once
// A temporary desk (the policy tests' DeskFixture: Memory.md, plan.md, memory/, notes/,
// scratch/, a hidden secrets/ folder and a hidden token.txt beside the desk) with the five
// file tools over it and a proposal store in <root>/proposals, outside the desk. Each call
// runs through call() on a real io_context, exactly as a desk would run it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "base/clock.h"
#include "runner/tools/file_tools.h"
#include "runner/tools/proposal_store.h"
#include "unit/policy/desk_fixture.h"

namespace deskd::tools::testing {

/// Runs one call of `tool` to its end on a fresh io_context; fails the test if it throws.
ToolResult run_call(Tool& tool, const boost::json::object& input);

/// The seed's refusal for writing `requested`.
std::string cannot_be_written(const std::string& requested);

/// The inode of `path` (not following a link).
ino_t inode_of(const std::filesystem::path& path);

/// 2024-01-01T00:00:00Z, the ManualClock's start.
inline std::chrono::system_clock::time_point new_year_2024() {
  return std::chrono::sys_days{std::chrono::year{2024} / 1 / 1};
}

class FileToolsFixture : public policy::testing::DeskFixture {
 protected:
  void SetUp() override;

  ToolResult read(const boost::json::object& input) { return run_call(*read_file_, input); }
  ToolResult write(const boost::json::object& input) { return run_call(*write_file_, input); }
  ToolResult edit(const boost::json::object& input) { return run_call(*edit_file_, input); }
  ToolResult list(const boost::json::object& input) { return run_call(*list_directory_, input); }
  ToolResult propose(const boost::json::object& input) { return run_call(*propose_file_change_, input); }

  std::filesystem::path proposals_folder() const { return root() / "proposals"; }
  ProposalStore& store() { return *store_; }
  /// A context over the same desk with other hidden paths (relative ones start at the desk).
  std::shared_ptr<const FileToolContext> context_hiding(std::vector<std::filesystem::path> hidden) const;

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(new_year_2024());
  std::shared_ptr<ProposalStore> store_;
  std::shared_ptr<const FileToolContext> context_;
  std::unique_ptr<Tool> read_file_, write_file_, edit_file_, list_directory_, propose_file_change_;
};

}  // namespace deskd::tools::testing
