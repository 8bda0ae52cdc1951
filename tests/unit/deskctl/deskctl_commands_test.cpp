// deskctl's table of commands against the protocol's operations: every row asks for an
// operation the protocol has, and every operation a person may ask for has a row, so a new
// operation without its deskctl command fails here.

#include "runner/deskctl/deskctl_commands.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace deskd::control::deskctl {
namespace {

TEST(DeskctlCommands, EveryRowAsksForAnOperationOfTheProtocol) {
  std::set<std::string> names;
  for (const Command& command : commands()) {
    SCOPED_TRACE(std::string(command.name));
    EXPECT_TRUE(names.insert(std::string(command.name)).second) << "two rows for one command";
    EXPECT_EQ(find_command(command.name), &command);
    const Operation* operation = find_operation(command.op.name);
    ASSERT_NE(operation, nullptr);
    EXPECT_EQ(operation->needs, command.op.needs);
    EXPECT_FALSE(command.description.empty());
    // One request and its reply, or a conversation of its own: exactly one of them.
    EXPECT_NE(command.print == nullptr, command.converse == nullptr);
  }
  EXPECT_EQ(find_command("reboot"), nullptr);
}

TEST(DeskctlCommands, EveryOperationAPersonAsksForHasACommand) {
  for (const Operation& operation : operations()) {
    // unfollow ends a follow of the same connection; deskctl ends one by hanging up.
    if (operation.name == op::kUnfollow.name) continue;
    bool asked = false;
    for (const Command& command : commands()) asked = asked || command.op.name == operation.name;
    EXPECT_TRUE(asked) << "no deskctl command asks for '" << operation.name << "'";
  }
}

}  // namespace
}  // namespace deskd::control::deskctl
