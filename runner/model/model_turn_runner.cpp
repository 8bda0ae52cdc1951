#include "runner/model/model_turn_runner.h"

#include <boost/json.hpp>

#include "runner/desk/event.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/usage_tracker.h"
#include "runner/tools/tool_registry.h"

namespace deskd::model {
namespace json = boost::json;
using boost::asio::awaitable;

namespace {

json::object text_message(const char* role, const std::string& text) {
  return {{"role", role}, {"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

std::string cut(std::string text, std::size_t maximum) {
  if (text.size() <= maximum) return text;
  std::size_t end = maximum;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // whole characters
  text.resize(end);
  return text + "\n[... the rest of this result was cut ...]";
}

}  // namespace

ModelTurnRunner::ModelTurnRunner(std::shared_ptr<ModelProvider> provider, std::shared_ptr<tools::ToolRegistry> registry,
                                 TurnRunnerSettings settings, desk::SessionKeeper* keeper, desk::UsageTracker* usage)
    : provider_(std::move(provider)), registry_(std::move(registry)), settings_(std::move(settings)), keeper_(keeper),
      usage_(usage) {}

ModelRequest ModelTurnRunner::request(Purpose purpose, json::array messages) const {
  ModelRequest built;
  built.system = settings_.system_prompt;
  if (!summary_.empty()) built.system += "\n\nWhat the previous session left for this one:\n" + summary_;
  built.messages = std::move(messages);
  built.purpose = purpose;
  if (purpose == Purpose::turn && registry_) {
    for (const auto& tool : registry_->tools()) {
      boost::system::error_code error;
      json::value schema = json::parse(tool->input_schema(), error);
      built.tools.push_back({std::string(tool->name()), std::string(tool->description()),
                             !error && schema.is_object() ? schema.as_object() : json::object{{"type", "object"}}});
    }
  }
  return built;
}

awaitable<ModelResponse> ModelTurnRunner::ask(ModelRequest built) {
  ModelResponse response = co_await provider_->complete(std::move(built));
  if (usage_ != nullptr) (void)usage_->record(response.model, response.usage);
  co_return response;
}

awaitable<desk::TurnOutcome> ModelTurnRunner::run_turn(std::string message, desk::TurnContext& context) {
  transcript_.push_back(text_message("user", message));
  std::string reply;
  for (int round = 0;; ++round) {
    if (round > settings_.maximum_tool_rounds) {
      throw std::runtime_error("The turn asked for more than " + std::to_string(settings_.maximum_tool_rounds) +
                               " tool rounds and was ended.");
    }
    ModelResponse response = co_await ask(request(Purpose::turn, transcript_));
    context.progress();
    json::array content;
    if (!response.text.empty()) {
      content.push_back(json::object{{"type", "text"}, {"text", response.text}});
      context.publish(desk::event_kind::kModelText, {{"text", response.text}});
      reply = response.text;
    }
    for (const ToolCall& call : response.tool_calls) {
      content.push_back(json::object{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", call.input}});
    }
    transcript_.push_back(json::object{{"role", "assistant"}, {"content", std::move(content)}});
    if (response.tool_calls.empty()) break;

    json::array results;
    for (const ToolCall& call : response.tool_calls) {
      context.publish(desk::event_kind::kToolCalled, {{"tool", call.name}, {"id", call.id}, {"input", call.input}});
      // Not a ?: around co_await: GCC 12 miscompiles co_await inside a conditional operator.
      tools::ToolResult result = tools::ToolResult::failure("This desk has no tools.");
      if (registry_) result = co_await registry_->call(call.name, call.input);
      json::object finished{{"tool", call.name}, {"id", call.id}, {"is_error", result.is_error},
                            {"text", cut(result.text, 2000)}};
      if (result.exit_status) finished["exit_status"] = *result.exit_status;
      context.publish(desk::event_kind::kToolFinished, std::move(finished));
      results.push_back(json::object{{"type", "tool_result"}, {"tool_use_id", call.id},
                                     {"content", cut(result.text, settings_.maximum_tool_result_bytes)},
                                     {"is_error", result.is_error}});
    }
    // Steering rides with the tool results: the model reads it before its next move.
    for (const desk::Trigger& steering : context.take_steering()) {
      const std::string who = steering.sender.empty() ? "the user" : steering.sender;
      results.push_back(json::object{{"type", "text"}, {"text", "Message from " + who + " while you worked: " + steering.text}});
    }
    transcript_.push_back(json::object{{"role", "user"}, {"content", std::move(results)}});
  }
  if (keeper_ != nullptr) (void)keeper_->save_transcript(transcript_);
  co_return desk::TurnOutcome{reply};
}

awaitable<std::string> ModelTurnRunner::side_question(std::string question) {
  json::array messages = transcript_;
  messages.push_back(text_message("user", "A side question, answered without tools and not part of the session: " + question));
  ModelResponse response = co_await ask(request(Purpose::side_question, std::move(messages)));
  co_return response.text;
}

awaitable<std::string> ModelTurnRunner::summarise() {
  json::array messages = transcript_;
  messages.push_back(text_message("user", "The day is over. Summarise this session for tomorrow: open positions, "
                                          "decisions, lessons and what to watch. Be brief."));
  ModelResponse response = co_await ask(request(Purpose::summary, std::move(messages)));
  co_return response.text;
}

void ModelTurnRunner::resume_session(const desk::Session& session) {
  summary_ = session.summary;
  transcript_ = session.transcript;
}

awaitable<void> ModelTurnRunner::close() { co_return; }

}  // namespace deskd::model
