// The file tools as a set: what add_file_tools registers, schemas a model can use, calls
// that run side by side, and no input that makes call() throw.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <string>
#include <vector>

#include "runner/tools/tool_registry.h"
#include "unit/tools/file_tools_fixture.h"

namespace {

using deskd::policy::testing::kSecret;
using deskd::policy::testing::kToken;
using deskd::policy::testing::write_file;
using deskd::tools::add_file_tools;
using deskd::tools::Tool;
using deskd::tools::ToolRegistry;
using deskd::tools::ToolResult;
using deskd::tools::testing::FileToolsFixture;
using deskd::tools::testing::run_call;
using ::testing::HasSubstr;
using ::testing::Not;

using FileToolsTest = FileToolsFixture;

TEST_F(FileToolsTest, AddFileToolsRegistersTheFiveTools) {
  ToolRegistry registry;
  add_file_tools(registry, policy(), store_, "research");
  std::vector<std::string> names;
  for (const auto& tool : registry.tools()) names.emplace_back(tool->name());
  EXPECT_EQ(names, (std::vector<std::string>{"read_file", "write_file", "edit_file", "list_directory",
                                             "propose_file_change"}));
  const auto result = run_call(*registry.find("read_file"), {{"path", "plan.md"}});
  EXPECT_EQ(result.text, "     1\tThe user's plan.\n");
}

TEST_F(FileToolsTest, SchemasAreJsonObjectsWhoseRequiredFieldsAreDescribed) {
  ToolRegistry registry;
  add_file_tools(registry, policy(), store_, "research");
  for (const auto& tool : registry.tools()) {
    SCOPED_TRACE(std::string(tool->name()));
    EXPECT_GT(tool->description().size(), 80u);
    boost::system::error_code error;
    const auto schema = boost::json::parse(tool->input_schema(), error);
    ASSERT_FALSE(error) << error.message();
    ASSERT_TRUE(schema.is_object());
    EXPECT_EQ(schema.at("type"), "object");
    const auto& properties = schema.at("properties").as_object();
    EXPECT_TRUE(properties.contains("path"));
    for (const auto& [key, property] : properties) {
      EXPECT_TRUE(property.as_object().contains("type")) << key;
      EXPECT_TRUE(property.as_object().contains("description")) << key;
    }
    if (const auto* required = schema.as_object().if_contains("required")) {
      for (const auto& field : required->as_array()) EXPECT_TRUE(properties.contains(field.as_string())) << field;
    }
  }
}

TEST_F(FileToolsTest, NoInputMakesACallThrowOrLeak) {
  std::vector<Tool*> tools = {read_file_.get(), write_file_.get(), edit_file_.get(), list_directory_.get(),
                              propose_file_change_.get()};
  std::vector<boost::json::value> values = {nullptr, true, -1, 0, 1.5, 1e300, "", "../secrets/key.txt",
                                            "../token.txt", "/proc/self/mem", "/dev/zero",
                                            "../../../../../../../../etc/shadow", "\xff\xfe"};
  values.emplace_back(std::uint64_t{18446744073709551615ULL});
  values.emplace_back(std::string(5000, '/'));
  values.emplace_back(std::string("a\0b", 3));
  values.emplace_back(boost::json::array{1, "x"});
  values.emplace_back(boost::json::object{{"path", "plan.md"}});
  const std::vector<std::string> keys = {"path", "content", "old_text", "new_text", "replace_all", "offset",
                                         "limit", "reason"};
  for (Tool* tool : tools) {
    for (const auto& key : keys) {
      for (const auto& value : values) {
        boost::json::object input{{"path", "notes/fuzz.md"}, {"content", "c"}, {"old_text", "c"},
                                  {"new_text", "d"}, {"reason", "r"}};
        input[key] = value;
        const ToolResult result = run_call(*tool, input);
        EXPECT_THAT(result.text, Not(HasSubstr(std::string(kSecret))));
        EXPECT_THAT(result.text, Not(HasSubstr(std::string(kToken))));
      }
    }
  }
}

TEST_F(FileToolsTest, CallsFromOneLoopRunSideBySideAndAllFinish) {
  write_file(desk() / "notes" / "a.md", "alpha\n");
  boost::asio::io_context io;
  std::vector<std::future<ToolResult>> futures;
  const boost::json::object read_input{{"path", "notes/a.md"}};
  const boost::json::object list_input{{"path", "notes"}};
  for (int index = 0; index < 20; ++index) {
    futures.push_back(boost::asio::co_spawn(io, read_file_->call(read_input), boost::asio::use_future));
    futures.push_back(boost::asio::co_spawn(io, list_directory_->call(list_input), boost::asio::use_future));
  }
  io.run();
  for (std::size_t index = 0; index < futures.size(); ++index) {
    const auto result = futures[index].get();
    EXPECT_EQ(result.text, index % 2 == 0 ? "     1\talpha\n" : "a.md\n");
  }
}

}  // namespace
