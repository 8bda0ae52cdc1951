#pragma once
// Small tools for the registry and MCP server tests: they answer at once (or after a
// delay), fail, throw, or carry a broken schema, and count their calls and closes.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "runner/tools/tool.h"
#include "runner/tools/tool_registry.h"

namespace deskd::tools::testing {

/// What the fake tools saw; shared so a test can look after the registry took the tools.
struct FakeToolLog {
  int calls = 0;
  int closes = 0;
  int prepares = 0;
  int slow_started = 0;
  int slow_cancelled = 0;  ///< slow calls whose wait was cancelled
};

/// echo {text}: answers the text; a missing text is an error result.
class EchoTool : public Tool {
 public:
  explicit EchoTool(std::shared_ptr<FakeToolLog> log, std::string name = "echo")
      : log_(std::move(log)), name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::string_view description() const override { return "Answers with the text it was given."; }
  std::string_view input_schema() const override {
    return R"({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
               "additionalProperties": false})";
  }
  boost::asio::awaitable<ToolResult> call(const boost::json::object& input) override {
    ++log_->calls;
    const auto* text = input.if_contains("text");
    if (text == nullptr || !text->is_string()) co_return ToolResult::failure("echo needs a string 'text'.");
    co_return ToolResult{std::string(text->as_string()), false, 0, false, {}};
  }
  void prepare() override { ++log_->prepares; }
  boost::asio::awaitable<void> close() override {
    ++log_->closes;
    co_return;
  }

 private:
  std::shared_ptr<FakeToolLog> log_;
  std::string name_;
};

/// slow {milliseconds}: answers "slept" after waiting that long on the event loop; a
/// cancelled wait is counted and answers "cancelled".
class SlowTool : public Tool {
 public:
  explicit SlowTool(std::shared_ptr<FakeToolLog> log = std::make_shared<FakeToolLog>()) : log_(std::move(log)) {}
  std::string_view name() const override { return "slow"; }
  std::string_view description() const override { return "Waits, then answers."; }
  std::string_view input_schema() const override {
    return R"({"type": "object", "properties": {"milliseconds": {"type": "integer"}}})";
  }
  boost::asio::awaitable<ToolResult> call(const boost::json::object& input) override {
    const auto* milliseconds = input.if_contains("milliseconds");
    const auto wait = std::chrono::milliseconds(milliseconds != nullptr && milliseconds->is_int64() ? milliseconds->as_int64() : 100);
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, wait);
    ++log_->slow_started;
    auto [error] = co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    if (error) {
      ++log_->slow_cancelled;
      co_return ToolResult::failure("cancelled");
    }
    co_return ToolResult::success("slept");
  }

 private:
  std::shared_ptr<FakeToolLog> log_;
};

/// throws: breaks the promise not to throw.
class ThrowingTool : public Tool {
 public:
  std::string_view name() const override { return "throws"; }
  std::string_view description() const override { return "Throws."; }
  std::string_view input_schema() const override { return R"({"type": "object"})"; }
  boost::asio::awaitable<ToolResult> call(const boost::json::object&) override {
    throw std::runtime_error("the fake tool broke");
    co_return ToolResult::success("never");
  }
  boost::asio::awaitable<void> close() override { throw std::runtime_error("closing broke"); }
};

/// broken_schema: its schema is not JSON.
class BrokenSchemaTool : public Tool {
 public:
  std::string_view name() const override { return "broken_schema"; }
  std::string_view description() const override { return "Has a schema that is not JSON."; }
  std::string_view input_schema() const override { return "{not json"; }
  boost::asio::awaitable<ToolResult> call(const boost::json::object&) override {
    co_return ToolResult{"bytes \xff\xfe here", false, std::nullopt, true, {}};
  }
};

/// A registry with echo, slow, throws and broken_schema.
inline ToolRegistry make_fake_registry(std::shared_ptr<FakeToolLog> log) {
  ToolRegistry registry;
  registry.add(std::make_unique<EchoTool>(log));
  registry.add(std::make_unique<SlowTool>(log));
  registry.add(std::make_unique<ThrowingTool>());
  registry.add(std::make_unique<BrokenSchemaTool>());
  return registry;
}

/// Runs `operation` to its end on a fresh io_context and returns its value.
template <typename T>
T run_on_loop(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  std::optional<T> result;
  boost::asio::co_spawn(io, std::move(operation), [&](std::exception_ptr escaped, T value) {
    if (escaped) std::rethrow_exception(escaped);
    result = std::move(value);
  });
  io.run();
  return std::move(*result);
}

inline void run_on_loop(boost::asio::awaitable<void> operation) {
  boost::asio::io_context io;
  boost::asio::co_spawn(io, std::move(operation), [](std::exception_ptr escaped) {
    if (escaped) std::rethrow_exception(escaped);
  });
  io.run();
}

}  // namespace deskd::tools::testing
