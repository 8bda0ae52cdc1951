// ToolRegistry: tools found by name, unknown names answered with the list, a throwing tool
// contained, and closing that reaches every tool once.

#include "runner/tools/tool_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/tools/fake_tools.h"

namespace deskd::tools::testing {
namespace {

using ::testing::HasSubstr;

// waits_throwing: waits an hour the way most coroutines wait, so that a cancelled wait
// throws operation_aborted out of it; or, given {"abort_itself": true}, throws that code
// without any caller being cancelled (an inner wait of its own that failed).
class ThrowsWhenCancelledTool : public Tool {
 public:
  std::string_view name() const override { return "waits_throwing"; }
  std::string_view description() const override { return "Waits; a cancelled wait throws."; }
  std::string_view input_schema() const override { return R"({"type": "object"})"; }
  boost::asio::awaitable<ToolResult> call(const boost::json::object& input) override {
    if (input.contains("abort_itself")) throw boost::system::system_error(boost::asio::error::operation_aborted);
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, std::chrono::hours(1));
    co_await timer.async_wait(boost::asio::use_awaitable);
    co_return ToolResult::success("waited an hour");
  }
};

boost::json::object with_text(std::string text) { return boost::json::object{{"text", std::move(text)}}; }

TEST(ToolRegistryTest, FindsToolsByNameInTheOrderAdded) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry = make_fake_registry(log);
  ASSERT_EQ(registry.tools().size(), 4u);
  EXPECT_EQ(registry.tools()[0]->name(), "echo");
  EXPECT_EQ(registry.tools()[3]->name(), "broken_schema");
  ASSERT_NE(registry.find("slow"), nullptr);
  EXPECT_EQ(registry.find("slow")->name(), "slow");
  EXPECT_EQ(registry.find("nothing"), nullptr);
  EXPECT_EQ(registry.find(""), nullptr);
}

TEST(ToolRegistryTest, RefusesASecondToolWithTheSameNameAndANullTool) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry;
  EXPECT_TRUE(registry.add(std::make_unique<EchoTool>(log)));
  EXPECT_FALSE(registry.add(std::make_unique<EchoTool>(log)));
  EXPECT_FALSE(registry.add(nullptr));
  EXPECT_EQ(registry.tools().size(), 1u);
}

TEST(ToolRegistryTest, CallsTheNamedTool) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry = make_fake_registry(log);
  const ToolResult result = run_on_loop(registry.call("echo", with_text("hello")));
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(result.text, "hello");
  EXPECT_EQ(log->calls, 1);
}

TEST(ToolRegistryTest, PassesOnAToolsOwnErrorResult) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry = make_fake_registry(log);
  const ToolResult result = run_on_loop(registry.call("echo", boost::json::object{}));
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "echo needs a string 'text'.");
}

TEST(ToolRegistryTest, AnUnknownToolIsAnErrorResultNamingTheKnownOnes) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry = make_fake_registry(log);
  const ToolResult result = run_on_loop(registry.call("rm_rf", {}));
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text,
            "There is no tool called 'rm_rf'. The tools are: echo, slow, throws, broken_schema.");
  EXPECT_EQ(log->calls, 0);
}

TEST(ToolRegistryTest, AHugeUnknownNameIsCutInTheAnswer) {
  ToolRegistry registry;
  const ToolResult result = run_on_loop(registry.call(std::string(100000, 'x'), {}));
  EXPECT_TRUE(result.is_error);
  EXPECT_LT(result.text.size(), 300u);
  EXPECT_THAT(result.text, HasSubstr("The tools are: none."));
}

TEST(ToolRegistryTest, AToolThatThrowsBecomesAnErrorResult) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry = make_fake_registry(log);
  const ToolResult result = run_on_loop(registry.call("throws", {}));
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "throws failed: the fake tool broke");
}

TEST(ToolRegistryTest, ACancelledCallEndsWithTheCancellationNotAResult) {
  ToolRegistry registry;
  registry.add(std::make_unique<ThrowsWhenCancelledTool>());
  boost::asio::io_context io;
  boost::asio::cancellation_signal stop;
  std::exception_ptr ended_with;
  bool ended = false;
  boost::asio::co_spawn(io, registry.call("waits_throwing", {}),
                        boost::asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr escaped, ToolResult) {
                          ended = true;
                          ended_with = escaped;
                        }));
  boost::asio::post(io, [&] { stop.emit(boost::asio::cancellation_type::terminal); });
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(ended);
  // A /stop during the call must reach the turn as the cancellation (TURN_STOPPED), not
  // as a tool's error the model would be shown.
  ASSERT_TRUE(ended_with);
  try {
    std::rethrow_exception(ended_with);
  } catch (const boost::system::system_error& error) {
    EXPECT_EQ(error.code(), boost::asio::error::operation_aborted);
  }
}

TEST(ToolRegistryTest, AToolsOwnAbortedWaitIsItsFailureWhenNobodyCancelled) {
  ToolRegistry registry;
  registry.add(std::make_unique<ThrowsWhenCancelledTool>());
  const ToolResult result = run_on_loop(registry.call("waits_throwing", boost::json::object{{"abort_itself", true}}));
  EXPECT_TRUE(result.is_error);
  EXPECT_THAT(result.text, HasSubstr("waits_throwing failed: "));
}

TEST(ToolRegistryTest, CloseClosesEveryToolOnceEvenWhenOneThrows) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry;
  registry.add(std::make_unique<ThrowingTool>());  // first, so its throw must not stop the rest
  registry.add(std::make_unique<EchoTool>(log));
  registry.add(std::make_unique<EchoTool>(log, "echo_two"));
  EXPECT_FALSE(registry.closed());
  run_on_loop(registry.close());
  EXPECT_TRUE(registry.closed());
  EXPECT_EQ(log->closes, 2);
  run_on_loop(registry.close());
  EXPECT_EQ(log->closes, 2);
}

TEST(ToolRegistryTest, PrepareReachesEveryToolUntilClosed) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry;
  registry.add(std::make_unique<EchoTool>(log));
  registry.add(std::make_unique<EchoTool>(log, "echo_two"));
  registry.prepare();
  EXPECT_EQ(log->prepares, 2);
  run_on_loop(registry.close());
  registry.prepare();
  EXPECT_EQ(log->prepares, 2);
}

TEST(ToolRegistryTest, CallsAfterCloseAreErrorResults) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry = make_fake_registry(log);
  run_on_loop(registry.close());
  const ToolResult result = run_on_loop(registry.call("echo", with_text("late")));
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.text, "The tools are closed: the desk has stopped.");
  EXPECT_EQ(log->calls, 0);
}

TEST(ToolRegistryTest, CallsInParallelAllComplete) {
  auto log = std::make_shared<FakeToolLog>();
  ToolRegistry registry = make_fake_registry(log);
  boost::asio::io_context io;
  // call() takes its input by reference: the inputs live until the calls are done.
  const boost::json::object echo_input = with_text("x");
  const boost::json::object slow_input{{"milliseconds", 5}};
  int finished = 0;
  for (int index = 0; index < 20; ++index) {
    const bool echo = index % 2 == 0;
    boost::asio::co_spawn(io, registry.call(echo ? "echo" : "slow", echo ? echo_input : slow_input),
                          [&](std::exception_ptr escaped, ToolResult result) {
                            EXPECT_FALSE(escaped);
                            EXPECT_FALSE(result.is_error) << result.text;
                            ++finished;
                          });
  }
  io.run();
  EXPECT_EQ(finished, 20);
  EXPECT_EQ(log->calls, 10);
}

}  // namespace
}  // namespace deskd::tools::testing
