#include "unit/tools/file_tools_fixture.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

namespace deskd::tools::testing {

ToolResult run_call(Tool& tool, const boost::json::object& input) {
  boost::asio::io_context io;
  auto future = boost::asio::co_spawn(io, tool.call(input), boost::asio::use_future);
  io.run();
  try {
    return future.get();
  } catch (const std::exception& error) {
    ADD_FAILURE() << tool.name() << " threw: " << error.what();
  } catch (...) {
    ADD_FAILURE() << tool.name() << " threw something";
  }
  return ToolResult::failure("(threw)");
}

std::string cannot_be_written(const std::string& requested) {
  return requested +
         " cannot be written. You may write only inside memory/, notes/ and scratch/ of your desk folder, "
         "and your Memory.md. Propose changes to the user's files with propose_file_change.";
}

ino_t inode_of(const std::filesystem::path& path) {
  struct stat status {};
  EXPECT_EQ(::lstat(path.c_str(), &status), 0) << path;
  return status.st_ino;
}

void FileToolsFixture::SetUp() {
  DeskFixture::SetUp();
  if (HasFatalFailure()) return;
  auto opened = ProposalStore::open(proposals_folder(), clock_);
  ASSERT_TRUE(opened.ok()) << opened.error().what;
  store_ = std::move(opened).value();
  context_ = std::make_shared<const FileToolContext>(policy(), store_, "research");
  read_file_ = std::make_unique<ReadFileTool>(context_);
  write_file_ = std::make_unique<WriteFileTool>(context_);
  edit_file_ = std::make_unique<EditFileTool>(context_);
  list_directory_ = std::make_unique<ListDirectoryTool>(context_);
  propose_file_change_ = std::make_unique<ProposeFileChangeTool>(context_);
}

std::shared_ptr<const FileToolContext> FileToolsFixture::context_hiding(
    std::vector<std::filesystem::path> hidden) const {
  auto created = policy::PathPolicy::create(desk(), hidden);
  EXPECT_TRUE(created.ok()) << created.error().what;
  if (!created.ok()) return nullptr;
  return std::make_shared<const FileToolContext>(std::move(created).value(), store_, "research");
}

}  // namespace deskd::tools::testing
