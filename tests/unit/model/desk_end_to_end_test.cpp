// A whole desk on the script model, driving its real tools: bash in the sandbox, the file
// tools under the path policy, proposals — the demo's script, checked for what it did.

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/session_keeper.h"
#include "runner/journal/journal.h"
#include "runner/model/model_turn_runner.h"
#include "runner/model/script_provider.h"
#include "runner/tools/desk_tools.h"
#include "runner/tools/proposal_store.h"
#include "sandbox/desk_preparation.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string read(const fs::path& path) {
  std::ifstream file(path);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

TEST(DeskEndToEndTest, TheDemoScriptDoesRealWorkInTheSandbox) {
  char pattern[] = "/var/tmp/deskd-e2e-XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  fs::copy(fs::path(DESKD_SOURCE_DIR) / "examples/desks/nifty-desk", root / "desk", fs::copy_options::recursive);
  fs::copy(fs::path(DESKD_SOURCE_DIR) / "examples/secrets", root / "secrets", fs::copy_options::recursive);
  fs::create_directories(root / "state");
  const fs::path hidden[] = {root / "secrets"};

  SystemClock clock;
  asio::io_context context;
  auto confinement = policy::Confinement::create(root / "desk", hidden).value();
  auto spec = sandbox::SandboxSpecBuilder(confinement).build().value();
  ASSERT_TRUE(sandbox::prepare_desk_for_sandbox(spec).ok());
  auto proposals = tools::ProposalStore::open(root / "state/proposals", std::make_shared<SystemClock>());
  ASSERT_TRUE(proposals.ok()) << proposals.error().what;
  tools::DeskToolSettings settings{spec, 20, 20000, "nifty", *proposals};
  auto registry = std::make_shared<tools::ToolRegistry>(tools::make_desk_tools(context.get_executor(), settings));
  desk::SessionKeeper keeper(root / "state/sessions", clock);
  auto journal = desk::Journal::open(root / "state/journal.jsonl");
  ASSERT_TRUE(journal.ok());
  auto runner = std::make_shared<ModelTurnRunner>(std::make_shared<ScriptProvider>(ScriptProvider::embedded_demo()),
                                                  registry, TurnRunnerSettings{"You run the NIFTY desk."}, &keeper);
  desk::EventBus bus(clock);
  auto events = bus.subscribe(context.get_executor(), 100000);
  desk::DeskParts parts;
  parts.tool_registry = registry;
  parts.session_keeper = &keeper;
  parts.journal = &*journal;
  desk::DeskRuntime desk(context.get_executor(), {.name = "nifty"}, bus, runner, clock, parts);
  asio::cancellation_signal stop;
  bool ended = false;
  asio::co_spawn(context, desk.run(), asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr) { ended = true; }));

  desk::Trigger trigger;
  trigger.desk = "nifty";
  trigger.text = "Prepare today's notes.";
  ASSERT_TRUE(desk.submit(trigger).ok());
  std::vector<desk::Event> seen;
  const auto finished = [&] {
    return std::any_of(seen.begin(), seen.end(), [](const desk::Event& event) {
      return event.kind == "TURN_FINISHED" || event.kind == "TURN_FAILED";
    });
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!finished() && std::chrono::steady_clock::now() < give_up) {
    context.restart();
    context.run_for(std::chrono::milliseconds(20));
    while (auto event = events->try_next()) seen.push_back(std::move(*event));
  }
  ASSERT_TRUE(finished());
  const desk::Event& last = seen.back().kind == "TURN_FINISHED" ? seen.back() : *std::find_if(seen.begin(), seen.end(), [](const desk::Event& e) { return e.kind == "TURN_FINISHED" || e.kind == "TURN_FAILED"; });
  ASSERT_EQ(last.kind, "TURN_FINISHED") << boost::json::serialize(last.data);
  EXPECT_THAT(std::string(last.data.at("reply").as_string()), HasSubstr("notes/today.md"));

  std::vector<std::string> tool_texts;
  for (const auto& event : seen) {
    if (event.kind == "TOOL_FINISHED") tool_texts.emplace_back(event.data.at("text").as_string());
  }
  ASSERT_GE(tool_texts.size(), 7u);
  EXPECT_THAT(tool_texts[0], HasSubstr((root / "desk").native()));               // pwd in the sandbox
  // bash: the secret lies outside the desk folder, so the minimal view does not hold it.
  EXPECT_THAT(tool_texts[2], HasSubstr("No such file or directory"));
  EXPECT_THAT(tool_texts[3], HasSubstr("holds secrets and cannot be read."));    // read_file: the policy
  EXPECT_THAT(tool_texts[4], HasSubstr("pivot 24150"));                          // python3 in the sandbox
  EXPECT_THAT(tool_texts[6], HasSubstr("cannot be written"));                    // plan.md is the user's
  EXPECT_THAT(read(root / "desk/notes/today.md"), HasSubstr("pivot 24150"));
  EXPECT_THAT(read(root / "desk/scratch/levels.txt"), HasSubstr("resistance 24392"));
  EXPECT_THAT(read(root / "desk/plan.md"), HasSubstr("Maximum open lots: 4"));
  EXPECT_EQ((*proposals)->list()->size(), 1u);
  EXPECT_FALSE(keeper.session().transcript.empty());

  stop.emit(asio::cancellation_type::terminal);
  context.restart();
  context.run_for(std::chrono::seconds(2));
  EXPECT_TRUE(ended);
  fs::remove_all(root);
}

}  // namespace
}  // namespace deskd::model
