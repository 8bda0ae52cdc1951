// Sessions stay within the model's context window whatever the server says about tokens
// (issue 27, point 5): the agent loop over the real openai provider and a fake Chat
// Completions server on loopback that sends no usage (a local OpenAI-compatible server
// that ignores stream_options), one that under-reports, and one that counts honestly. The
// session is kept on disk by the real SessionKeeper, and every request is measured as it
// arrived on the wire.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "base/clock.h"
#include "runner/desk/session_keeper.h"
#include "runner/model/context_budget.h"
#include "runner/model/model_turn_runner.h"
#include "runner/model/openai_provider.h"
#include "runner/tools/tool_registry.h"
#include "unit/model/fake_http_server.h"
#include "unit/model/provider_test_support.h"

namespace deskd::model {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using testing::FakeHttpServer;
using testing::FakeResponse;
using testing::RecordedRequest;

constexpr std::uint32_t kWindow = 8000;
const std::string kToolWord = "RUN-THE-TOOL";

std::string chunk(const json::object& delta, const char* finish_reason = nullptr) {
  json::object choice{{"index", 0}, {"delta", delta}, {"finish_reason", nullptr}};
  if (finish_reason != nullptr) choice["finish_reason"] = finish_reason;
  return "data: " +
         json::serialize(json::object{{"id", "c1"}, {"object", "chat.completion.chunk"}, {"model", "local-test"},
                                      {"choices", json::array{std::move(choice)}}}) +
         "\n\n";
}

std::string usage_chunk(std::uint64_t prompt_tokens) {
  return "data: " +
         json::serialize(json::object{{"id", "c1"}, {"object", "chat.completion.chunk"}, {"model", "local-test"},
                                      {"choices", json::array{}},
                                      {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", 50},
                                                 {"total_tokens", prompt_tokens + 50}}}}) +
         "\n\n";
}

// How the fake server counts a request's tokens: not at all, a constant, or honestly.
enum class Counting { none, ten_tokens, six_bytes_a_token };

// Answers like a local model: summaries when asked for one, a tool call when the user's
// message asks for the tool, else a reply of about 1.5 KB.
FakeResponse answer(const RecordedRequest& request, Counting counting) {
  const json::object body = json::parse(request.body).as_object();
  const json::object& last = body.at("messages").as_array().back().as_object();
  const std::string last_text = json::serialize(last);
  std::vector<testing::BodyPiece> pieces;
  if (request.body.find("Summarise everything above") != std::string::npos) {
    pieces.push_back({chunk({{"role", "assistant"}, {"content", "SUMMARY: the desk watched the market and kept notes."}})});
    pieces.push_back({chunk(json::object{}, "stop")});
  } else if (last.at("role") == "user" && last_text.find(kToolWord) != std::string::npos) {
    pieces.push_back({chunk({{"role", "assistant"},
                             {"tool_calls", json::array{json::object{{"index", 0}, {"id", "call_1"}, {"type", "function"},
                                                                     {"function", {{"name", "dump"}, {"arguments", "{}"}}}}}}})});
    pieces.push_back({chunk(json::object{}, "tool_calls")});
  } else {
    pieces.push_back({chunk({{"role", "assistant"}, {"content", "Noted. " + std::string(1500, 'r')}})});
    pieces.push_back({chunk(json::object{}, "stop")});
  }
  if (counting == Counting::ten_tokens) pieces.push_back({usage_chunk(10)});
  if (counting == Counting::six_bytes_a_token) pieces.push_back({usage_chunk(request.body.size() / 6)});
  pieces.push_back({"data: [DONE]\n\n"});
  return FakeResponse::event_stream(std::move(pieces));
}

// A tool whose result alone is more than the whole window (80 KB against 32 KB).
class DumpTool final : public tools::Tool {
 public:
  std::string_view name() const override { return "dump"; }
  std::string_view description() const override { return "Prints a large file."; }
  std::string_view input_schema() const override { return R"({"type":"object"})"; }
  asio::awaitable<tools::ToolResult> call(const json::object&) override {
    co_return tools::ToolResult::success("head of the file\n" + std::string(80000, 'd') + "\ntail of the file");
  }
};

class RecordingContext final : public desk::TurnContext {
 public:
  std::vector<desk::Trigger> take_steering() override { return {}; }
  void publish(const std::string& kind, json::object data) override { events.emplace_back(kind, std::move(data)); }
  void progress() override {}
  std::size_t count(std::string_view kind) const {
    std::size_t found = 0;
    for (const auto& event : events) found += event.first == kind ? 1 : 0;
    return found;
  }
  std::vector<std::pair<std::string, json::object>> events;
};

class BoundedSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/var/tmp/deskd-bounded-session-XXXXXX";
    ASSERT_NE(::mkdtemp(folder), nullptr);
    folder_ = folder;
    keeper_.emplace(folder_ / "sessions", clock_);
  }
  void TearDown() override {
    runner_.reset();
    std::filesystem::remove_all(folder_);
  }

  void start(Counting counting, std::uint32_t window = kWindow) {
    server_.set_fallback([counting](const RecordedRequest& request) { return answer(request, counting); });
    auto created = OpenAiProvider::create(io_.get_executor(), testing::test_settings(server_.url("/v1"), "local-test"));
    ASSERT_TRUE(created.ok()) << created.error().what;
    auto registry = std::make_shared<tools::ToolRegistry>();
    registry->add(std::make_unique<DumpTool>());
    TurnRunnerSettings settings{"You run the test desk."};
    settings.context_window_tokens = window;
    runner_ = std::make_unique<ModelTurnRunner>(std::shared_ptr<ModelProvider>(std::move(created).value()), registry,
                                                settings, &*keeper_);
    ASSERT_TRUE(keeper_->start(*runner_).ok());
  }

  desk::TurnOutcome turn(std::string message) {
    auto future = asio::co_spawn(io_, runner_->run_turn(std::move(message), context_), asio::use_future);
    io_.restart();
    io_.run();
    return future.get();
  }

  std::uintmax_t session_file_bytes() const { return std::filesystem::file_size(folder_ / "sessions" / "current.json"); }

  // The largest request the server received, in tokens at 4 bytes a token of its body.
  std::uint64_t largest_request_tokens() const {
    std::uint64_t largest = 0;
    for (const RecordedRequest& request : server_.requests()) largest = std::max(largest, estimated_tokens(request.body.size()));
    return largest;
  }

  SystemClock clock_;
  std::filesystem::path folder_;
  std::optional<desk::SessionKeeper> keeper_;
  FakeHttpServer server_;
  asio::io_context io_;
  std::unique_ptr<ModelTurnRunner> runner_;
  RecordingContext context_;
};

TEST_F(BoundedSessionTest, AServerWithoutUsageKeepsEveryRequestAndTheSessionFileWithinTheWindowOver300Turns) {
  start(Counting::none);
  for (int index = 0; index < 300; ++index) {
    // Every 25th turn the model dumps a file larger than the window.
    std::string message = "Turn " + std::to_string(index) + ": watch the market. " + std::string(1000, 'm');
    if (index % 25 == 7) message += " " + kToolWord;
    const std::size_t requests_before = server_.requests().size();
    ASSERT_NO_THROW(turn(message)) << "turn " << index;
    // Each request of this turn, and the session saved after it, within the window.
    const auto requests = server_.requests();
    for (std::size_t request = requests_before; request < requests.size(); ++request) {
      ASSERT_LE(estimated_tokens(requests[request].body.size()), kWindow)
          << "turn " << index << " sent a request of " << requests[request].body.size() << " bytes";
    }
    ASSERT_LE(session_file_bytes(), kWindow * kBytesPerToken) << "after turn " << index;
    // The turn's own message reached the model whole, however long the session.
    bool sent = false;
    for (std::size_t request = requests_before; request < requests.size(); ++request) {
      sent = sent || requests[request].body.find("Turn " + std::to_string(index) + ": watch") != std::string::npos;
    }
    ASSERT_TRUE(sent) << "turn " << index;
  }
  EXPECT_GT(context_.count("SESSION_COMPACTED"), 10u);
  EXPECT_EQ(context_.count("SESSION_COMPACTION_FAILED"), 0u);
  EXPECT_LE(largest_request_tokens(), kWindow);
  // Compaction said it estimated: the server gave no counts.
  for (const auto& [kind, data] : context_.events) {
    if (kind == "SESSION_COMPACTED") {
      EXPECT_EQ(data.at("tokens_estimated"), true);
    }
  }
}

TEST_F(BoundedSessionTest, AServerThatUnderReportsIsNotBelieved) {
  // 10 tokens for every request: by turn 6 the requests would be past 50 KB.
  start(Counting::ten_tokens, 16000);
  for (int index = 0; index < 12; ++index) {
    ASSERT_NO_THROW(turn("Turn " + std::to_string(index) + ": " + std::string(10000, 'u')));
  }
  EXPECT_GE(context_.count("SESSION_COMPACTED"), 1u);
  EXPECT_LE(largest_request_tokens(), 16000u);
  EXPECT_LE(session_file_bytes(), 16000u * kBytesPerToken);
}

TEST_F(BoundedSessionTest, AServerThatCountsHonestlyIsTrustedAsBefore) {
  // Six bytes a token: the requests pass 4-byte estimates of the share (6,400 tokens,
  // 25.6 KB) well before the server's counts do (38.4 KB); compaction waits for the
  // server, as it always did.
  start(Counting::six_bytes_a_token);
  std::optional<std::size_t> first_compaction_turn;
  std::size_t largest_uncompacted_body = 0;
  for (int index = 0; index < 40 && !first_compaction_turn; ++index) {
    const std::size_t events_before = context_.count("SESSION_COMPACTED");
    const std::size_t requests_before = server_.requests().size();
    ASSERT_NO_THROW(turn("Turn " + std::to_string(index) + ": " + std::string(1000, 'h')));
    if (context_.count("SESSION_COMPACTED") > events_before) {
      first_compaction_turn = index;
      // The reply that led to it came from a request the server counted past the share.
      EXPECT_GT(server_.requests()[requests_before].body.size() / 6, 6400u);
    } else {
      largest_uncompacted_body = std::max(largest_uncompacted_body, server_.requests().back().body.size());
    }
  }
  ASSERT_TRUE(first_compaction_turn.has_value());
  EXPECT_GT(estimated_tokens(largest_uncompacted_body), 6400u) << "the estimate alone would have compacted earlier";
  for (const auto& [kind, data] : context_.events) {
    if (kind == "SESSION_COMPACTED") {
      EXPECT_EQ(data.at("tokens_estimated"), false);
    }
  }
}

}  // namespace
}  // namespace deskd::model
