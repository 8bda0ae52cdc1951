#include "runner/model/model_turn_runner.h"

#include <boost/asio/this_coro.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <optional>

#include "base/exception_text.h"
#include "runner/desk/budget_keeper.h"
#include "runner/desk/session_keeper.h"
#include "runner/desk/usage_tracker.h"
#include "runner/events/event.h"
#include "runner/model/retry.h"
#include "runner/model/tool_round.h"
#include "runner/tools/tool_registry.h"

namespace deskd::model {
namespace json = boost::json;
namespace asio = boost::asio;
using boost::asio::awaitable;

namespace {

json::object text_message(const char* role, const std::string& text) {
  return {{"role", role}, {"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

bool is_message(const json::value& message, std::string_view role) {
  const json::object* object = message.if_object();
  const json::value* found = object != nullptr ? object->if_contains("role") : nullptr;
  return found != nullptr && found->is_string() && found->get_string() == role;
}

// Adds the user's text to the transcript: a message of its own, or joined to a last user
// message (tool results a failed turn left), so that user and assistant still take turns.
void add_user_text(json::array& transcript, const std::string& text) {
  if (!transcript.empty() && is_message(transcript.back(), "user")) {
    json::object& last = transcript.back().as_object();
    if (last["content"].is_array()) {
      last["content"].as_array().push_back(json::object{{"type", "text"}, {"text", text}});
      return;
    }
  }
  transcript.push_back(text_message("user", text));
}

// When the transcript ends with an assistant's tool calls, adds the user message holding
// their results: those in `results` (tools that ran), then "did not run" for the rest.
void answer_open_tool_calls(json::array& transcript, json::array results, const std::string& why) {
  if (transcript.empty() || !is_message(transcript.back(), "assistant")) return;
  const json::value* content = transcript.back().as_object().if_contains("content");
  if (content == nullptr || !content->is_array()) return;
  std::vector<std::string> answered;
  for (const auto& block : results) {
    const json::value* id = block.is_object() ? block.as_object().if_contains("tool_use_id") : nullptr;
    if (id != nullptr && id->is_string()) answered.emplace_back(id->get_string());
  }
  bool any = false;
  for (const auto& block : content->as_array()) {
    const json::object* call = block.if_object();
    if (call == nullptr || call->if_contains("type") == nullptr || call->at("type") != "tool_use") continue;
    const json::value* id = call->if_contains("id");
    if (id == nullptr || !id->is_string()) continue;
    any = true;
    if (std::find(answered.begin(), answered.end(), std::string_view(id->get_string())) != answered.end()) continue;
    results.push_back(json::object{{"type", "tool_result"}, {"tool_use_id", *id},
                                   {"content", "This tool call did not run: " + why + "."}, {"is_error", true}});
  }
  if (any) transcript.push_back(json::object{{"role", "user"}, {"content", std::move(results)}});
}

// The assistant's message for the transcript: the provider's blocks in their order when it
// gave them (thinking before tool_use, passed back unchanged), else text and tool calls.
json::array assistant_content(const ModelResponse& response) {
  if (!response.content.empty()) return response.content;
  json::array content;
  if (!response.text.empty()) content.push_back(json::object{{"type", "text"}, {"text", response.text}});
  for (const ToolCall& call : response.tool_calls) {
    content.push_back(json::object{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", call.input}});
  }
  return content;
}

std::string cut_limit_words(const std::string& reason, std::uint32_t max_tokens) {
  if (reason == "max_tokens") return "its max_tokens limit (" + std::to_string(max_tokens) + " tokens)";
  return "the model's context window";
}

// The session as a turn found it.
struct TranscriptBefore {
  json::array transcript;
  std::string cut_note;
};

// The refusal `failure` holds, or nullptr when it is another failure.
const ProviderError* refusal_of(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const ProviderError& error) {
    return error.refused() ? &error : nullptr;
  } catch (...) {
    return nullptr;
  }
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
                                 TurnRunnerSettings settings, desk::SessionKeeper* keeper, desk::UsageTracker* usage,
                                 desk::BudgetKeeper* budget)
    : provider_(std::move(provider)), registry_(std::move(registry)), settings_(std::move(settings)), keeper_(keeper),
      usage_(usage), budget_(budget) {}

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

awaitable<void> ModelTurnRunner::save_session() {
  if (keeper_ != nullptr) (void)co_await keeper_->save_transcript(transcript_);
}

awaitable<ModelResponse> ModelTurnRunner::ask(ModelRequest built, std::uint64_t input_tokens) {
  // The call's worst case is held before it is made; a call that would pass a cap is not made.
  desk::BudgetReservation reservation;
  if (budget_ != nullptr) {
    auto answer = budget_->reserve(input_tokens != 0 ? input_tokens : estimated_tokens(request_bytes(built)));
    if (auto* refused = std::get_if<desk::BudgetRefusal>(&answer)) throw desk::BudgetReached(std::move(*refused));
    reservation = std::get<desk::BudgetReservation>(std::move(answer));
  }
  // A call that failed before a reply arrived throws here and the reservation's destructor
  // releases it; a reply that arrived whole but cannot be used (a refusal, a reply cut inside
  // a tool call) was billed, so it is counted and settled like any other before it is thrown
  // on. GCC 12: no co_await inside a catch block.
  std::optional<ModelResponse> response;
  std::exception_ptr unusable;
  try {
    response = co_await provider_->complete(std::move(built));
  } catch (const ProviderError& error) {
    if (!error.billed()) throw;
    unusable = std::current_exception();
    response.emplace();
    response->usage = error.billed()->usage;
    response->usage_reported = error.billed()->usage_reported;
    response->model = error.billed()->model;
  }
  co_await count_usage(*response, std::move(reservation));
  if (unusable) std::rethrow_exception(unusable);
  co_return std::move(*response);
}

awaitable<void> ModelTurnRunner::count_usage(const ModelResponse& response, desk::BudgetReservation reservation) {
  if (usage_ != nullptr || budget_ != nullptr) {
    // A server that sent no token counts leaves the request's usage unknown, not zero.
    std::optional<desk::Usage> reported;
    if (response.usage_reported) reported = response.usage;
    // Kept even when the turn is being stopped this moment: the request was made (and paid
    // for). asio throws at any co_await of a cancelled coroutine unless told not to.
    const bool throwing = co_await asio::this_coro::throw_if_cancelled();
    co_await asio::this_coro::throw_if_cancelled(false);
    if (budget_ != nullptr) {
      (void)co_await budget_->settle_off_loop(std::move(reservation), response.model, reported);
    } else {
      (void)co_await usage_->record_off_loop(response.model, reported);
    }
    co_await asio::this_coro::throw_if_cancelled(throwing);
  }
  ++requests_;
  tokens_ += response.usage.input_tokens + response.usage.output_tokens + response.usage.cache_read_tokens +
             response.usage.cache_write_tokens;
}

namespace {

// The turn's context hears about the request while it runs: each streamed piece is
// progress, and so is waiting out a retry, which the user also sees as an event. Built
// outside the coroutine: GCC 12 warns falsely about the frame when these lambdas are made
// inside it, and the request lives in ask_for_turn's frame, not run_turn's, because GCC 12
// also warns falsely (-Wmismatched-new-delete) once run_turn's frame holds it.
ModelRequest watched_by(ModelRequest request, desk::TurnContext& context) {
  request.on_progress = [&context] { context.progress(); };
  request.on_retry = [&context](const std::string& reason) {
    context.publish(desk::event_kind::kModelRetrying, {{"reason", reason}});
    context.progress();
  };
  return request;
}

// Each tool call is told as it starts (TOOL_CALLED) and ends (TOOL_FINISHED), and its
// result joins the round's `results` as it ends. Built outside the coroutine, as above.
ToolRoundWatch told_to(desk::TurnContext& context, const std::vector<ToolCall>& calls, json::array& results,
                       std::size_t maximum_result_bytes) {
  return ToolRoundWatch{
      [&context, &calls](std::size_t index) {
        context.publish(desk::event_kind::kToolCalled,
                        {{"tool", calls[index].name}, {"id", calls[index].id}, {"input", calls[index].input}});
      },
      [&context, &calls, &results, maximum_result_bytes](std::size_t index, const tools::ToolResult& result) {
        json::object finished{{"tool", calls[index].name},
                              {"id", calls[index].id},
                              {"is_error", result.is_error},
                              {"text", cut(result.text, 2000)}};
        if (result.exit_status) finished["exit_status"] = *result.exit_status;
        context.publish(desk::event_kind::kToolFinished, std::move(finished));
        results.push_back(json::object{{"type", "tool_result"},
                                       {"tool_use_id", calls[index].id},
                                       {"content", cut(result.text, maximum_result_bytes)},
                                       {"is_error", result.is_error}});
      }};
}

}  // namespace

awaitable<ModelResponse> ModelTurnRunner::ask_for_turn(desk::TurnContext& context) {
  co_await keep_within_window(context);
  ModelRequest built = request(Purpose::turn, transcript_);
  const std::size_t bytes = request_bytes(built);
  // The budget's input estimate: the request's size, or the server's last count plus what
  // was added since when that is more (a server counts some text as more than 4 bytes a token).
  const std::uint64_t input_tokens = std::max(estimated_tokens(bytes), next_request_tokens());
  ModelResponse response = co_await ask(watched_by(std::move(built), context), input_tokens);
  // What the request is counted as: the server's count when it fits the request's size.
  last_request_bytes_ = bytes;
  last_input_ = counted_input(response, estimated_tokens(bytes));
  last_trusted_tokens_.reset();
  if (!last_input_.estimated) last_trusted_tokens_ = last_input_.tokens;
  co_return response;
}

awaitable<desk::TurnOutcome> ModelTurnRunner::run_turn(std::string message, desk::TurnContext& context) {
  // The model takes far longer to write its first call than a terminal takes to start.
  if (registry_) registry_->prepare();
  // What the session was before this turn: a refusal takes the turn back out of it.
  TranscriptBefore before{transcript_, cut_note_};
  if (!cut_note_.empty()) add_user_text(transcript_, std::exchange(cut_note_, std::string()));
  add_user_text(transcript_, message);
  turn_message_ = message;
  std::string reply;
  std::string cut_reason;       // why the last reply was cut, if it was
  std::string before_the_cut;   // the cut reply that a continuation goes on from
  bool continued = false;
  // This round's results so far: a turn that ends mid-round still answers every tool call.
  json::array results;
  std::exception_ptr failure;
  try {
    for (int round = 0;; ++round) {
      if (round > settings_.maximum_tool_rounds) {
        throw std::runtime_error("The turn asked for more than " + std::to_string(settings_.maximum_tool_rounds) +
                                 " tool rounds and was ended.");
      }
      ModelResponse response = co_await ask_for_turn(context);
      context.progress();
      if (settings_.maximum_tokens != 0 && tokens_ > settings_.maximum_tokens) {
        throw std::runtime_error("The turn used " + std::to_string(tokens_) + " tokens, past its budget of " +
                                 std::to_string(settings_.maximum_tokens) + ", and was ended.");
      }
      if (!response.text.empty()) {
        context.publish(desk::event_kind::kModelText, {{"text", response.text}});
        reply = std::exchange(before_the_cut, std::string()) + response.text;
      }
      transcript_.push_back(json::object{{"role", "assistant"}, {"content", assistant_content(response)}});
      co_await compact_if_needed(context);
      cut_reason = is_cut_reply(response.stop_reason) ? response.stop_reason : std::string();
      if (!cut_reason.empty()) {
        const bool go_on = response.tool_calls.empty() && cut_reason == "max_tokens" &&
                           settings_.continue_after_max_tokens && !continued;
        // The event's words for deskctl: which limit, and what the user can do about it.
        const std::string limit = cut_reason == "max_tokens"
                                      ? "its max_tokens limit (" + std::to_string(settings_.max_tokens) + ")"
                                      : "the model's context window (" + cut_reason + ")";
        const std::string advice = go_on                        ? "the model is asked to go on"
                                   : cut_reason == "max_tokens" ? "raise max_tokens or ask for less"
                                                                : "/rollover starts a fresh session";
        context.publish(desk::event_kind::kModelReplyCut, {{"reason", cut_reason},
                                                           {"max_tokens", settings_.max_tokens},
                                                           {"continuing", go_on},
                                                           {"limit", limit},
                                                           {"advice", advice}});
        if (go_on) {
          continued = true;
          before_the_cut = reply;
          add_user_text(transcript_, "[deskd: your reply was cut at " + cut_limit_words(cut_reason, settings_.max_tokens) +
                                         ". Continue exactly where it stopped, without repeating what you wrote.]");
          continue;
        }
      }
      // A paused long turn (the Messages API's pause_turn) goes on when asked again with its
      // reply in the transcript.
      if (response.tool_calls.empty() && response.stop_reason == "pause_turn") continue;
      if (response.tool_calls.empty()) break;

      results = json::array{};
      const ToolRoundWatch watch = told_to(context, response.tool_calls, results, settings_.maximum_tool_result_bytes);
      const std::vector<tools::ToolResult> round_results = co_await run_tool_round(registry_, response.tool_calls, watch);
      // A desk that cannot run its tools (its terminal did not start) fails the turn
      // rather than let the model go on blind; the results still answer the calls.
      for (const tools::ToolResult& result : round_results) {
        if (!result.ends_turn.empty()) throw std::runtime_error(result.ends_turn);
      }
      // Steering rides with the tool results: the model reads it before its next move.
      for (const desk::Trigger& steering : context.take_steering()) {
        const std::string who = steering.sender.empty() ? "the user" : steering.sender;
        results.push_back(json::object{{"type", "text"}, {"text", "Message from " + who + " while you worked: " + steering.text}});
      }
      transcript_.push_back(json::object{{"role", "user"}, {"content", std::exchange(results, json::array{})}});
    }
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure && refusal_of(failure)) {
    // Anthropic's documentation on a refusal: "you must reset the conversation context"
    // before going on, or the next requests are refused too ("Handling stop reasons",
    // refusal). The refused message (and what the turn added after it) leaves the session,
    // so the next message starts clean and is not merged with it; the turn's outcome and
    // the journal keep what was asked.
    transcript_ = std::move(before.transcript);
    cut_note_ = std::move(before.cut_note);
    failure = std::make_exception_ptr(refusal_of(failure)->reworded(
        std::string(refusal_of(failure)->what()) +
        " The message was taken out of the session, so the next one starts without it."));
  } else if (failure) {
    // The session stays one a model accepts: every tool call it holds has its result, the
    // real one where the tool ran. (A request with a tool call and no result is refused.)
    answer_open_tool_calls(transcript_, std::move(results),
                           "the turn ended before it ran (" + describe_exception(failure) + ")");
  }
  // What the turn did is saved even when it is being stopped: asio throws at any co_await of
  // a cancelled coroutine unless told not to, and the save waits for its writer thread.
  const bool throwing = co_await asio::this_coro::throw_if_cancelled();
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await save_session();
  co_await asio::this_coro::throw_if_cancelled(throwing);
  if (failure) std::rethrow_exception(failure);
  if (!cut_reason.empty()) {
    // The model learns of the cut with the next message; the user from the turn's outcome.
    cut_note_ = "[deskd: your last reply was cut at " + cut_limit_words(cut_reason, settings_.max_tokens) +
                "; the user saw it only up to the cut.]";
  }
  co_return desk::TurnOutcome{reply, cut_reason};
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
  cut_note_.clear();  // it spoke of another session's last reply
  // A session saved by a deskd that died mid-round may end with calls no tool answered.
  answer_open_tool_calls(transcript_, json::array{}, "deskd stopped before it ran");
}

awaitable<void> ModelTurnRunner::close() { co_return; }

}  // namespace deskd::model
