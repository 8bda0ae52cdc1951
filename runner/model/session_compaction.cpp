// ModelTurnRunner's compaction: keeps a session, and each request of it, within the
// model's context window whether or not the server counts tokens (issue 27, point 5).

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <optional>

#include "base/exception_text.h"
#include "runner/events/event.h"
#include "runner/model/context_budget.h"
#include "runner/model/model_turn_runner.h"

namespace deskd::model {
namespace json = boost::json;
using boost::asio::awaitable;

namespace {

// Passes of summarising, and of dropping, within one compaction: each halves the
// transcript, so a few always suffice, and a server that keeps answering cannot loop us.
constexpr int kMaximumPasses = 3;

json::object text_message(const std::string& text) {
  return {{"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

bool holds_tool_results(const json::value& message) {
  const json::object& object = message.as_object();
  if (object.at("role") != "user") return false;
  const json::value& content = object.at("content");
  if (!content.is_array()) return false;
  for (const auto& block : content.as_array()) {
    if (block.is_object() && block.as_object().if_contains("type") != nullptr && block.at("type") == "tool_result") {
      return true;
    }
  }
  return false;
}

// Where the transcript may be cut so that what is kept still makes sense to the model: at
// a user message that starts a turn, or at an assistant message (whose preceding message,
// summarised away, held no tool call waiting for it). Never at a user message holding
// tool results: they would lose the tool calls they answer.
std::optional<std::size_t> split_point(const json::array& transcript) {
  for (std::size_t index = std::max<std::size_t>(transcript.size() / 2, 1); index + 1 < transcript.size(); ++index) {
    const json::object& message = transcript[index].as_object();
    if (message.at("role") == "user" && !holds_tool_results(transcript[index])) return index;
    if (message.at("role") == "assistant") {
      const json::value& before = transcript[index - 1];
      if (before.as_object().at("role") == "user") return index;
    }
  }
  return std::nullopt;
}

// A summary longer than this share of the budget is cut: a model asked to be brief may
// still answer with its whole max_tokens, which can be more than a small window.
std::string capped(std::string text, std::size_t maximum) {
  if (text.size() <= maximum) return text;
  std::size_t end = maximum;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // whole characters
  text.resize(end);
  return text + "\n[... the rest of this summary was cut to fit the context window ...]";
}

// The bytes the messages of a request may take so that the whole request stays within
// `tokens`, given `fixed` bytes of system prompt and tools. When those alone take (nearly)
// all of it, a quarter of it is still allowed: a request must carry the turn.
std::size_t message_budget(double tokens, std::size_t fixed) {
  const auto bytes = static_cast<std::size_t>(tokens * static_cast<double>(kBytesPerToken));
  return bytes > fixed + bytes / 4 ? bytes - fixed : bytes / 4;
}

}  // namespace

std::size_t ModelTurnRunner::fixed_request_bytes() const { return request_bytes(request(Purpose::turn, json::array{})); }

std::uint64_t ModelTurnRunner::next_request_tokens() const {
  const std::size_t bytes = fixed_request_bytes() + messages_bytes(transcript_);
  if (!last_trusted_tokens_) return estimated_tokens(bytes);
  return *last_trusted_tokens_ + estimated_tokens(bytes > last_request_bytes_ ? bytes - last_request_bytes_ : 0);
}

awaitable<void> ModelTurnRunner::compact_if_needed(desk::TurnContext& context) {
  const double share = settings_.compaction_share * settings_.context_window_tokens;
  InputCount used = last_input_;
  // A server that counts is trusted as before. Without its count, the reply just added
  // counts too: the session saved after the turn stays within the share.
  if (used.estimated) used.tokens = std::max(used.tokens, next_request_tokens());
  if (static_cast<double>(used.tokens) <= share) co_return;
  co_await compact(used, context);
}

awaitable<void> ModelTurnRunner::keep_within_window(desk::TurnContext& context) {
  const std::uint64_t next = next_request_tokens();
  // A server that counts has had its say after the last reply (compact_if_needed, as
  // always); here only what was added since may make a request it would refuse. A server
  // that does not count is held to the share before every request.
  const double limit = last_trusted_tokens_ ? settings_.context_window_tokens
                                            : settings_.compaction_share * settings_.context_window_tokens;
  if (static_cast<double>(next) <= limit) co_return;
  co_await compact(InputCount{next, true}, context);
}

awaitable<std::optional<std::string>> ModelTurnRunner::summary_of(std::size_t split, InputCount used,
                                                                  desk::TurnContext& context) {
  json::array older(transcript_.begin(), transcript_.begin() + static_cast<std::ptrdiff_t>(split));
  // The summary request is a request too: its messages are cut to the share like any.
  const std::size_t budget = message_budget(settings_.compaction_share * settings_.context_window_tokens,
                                            fixed_request_bytes());
  (void)cut_longest_texts(older, budget, budget / 16);
  json::object request_text = text_message("The session is getting too long for the context window. Summarise everything "
                                           "above for yourself: decisions, open positions, what you were doing and what "
                                           "is left, the facts you will need. Be complete but brief.");
  // After tool results the request joins their message: user and assistant take turns.
  if (older.back().as_object().at("role") == "user" && older.back().as_object().at("content").is_array()) {
    older.back().as_object()["content"].as_array().push_back(request_text.at("content").as_array().front());
  } else {
    older.push_back(std::move(request_text));
  }
  // A summary that fails leaves the older part as it was (compact() bounds it otherwise);
  // only a /stop or a stopping desk ends the turn here.
  ModelResponse summary;
  std::exception_ptr failure;
  try {
    summary = co_await ask(request(Purpose::summary, std::move(older)));
  } catch (...) {
    failure = std::current_exception();
  }
  // Not co_await inside &&: GCC 12 miscompiles co_await in a short-circuit expression.
  const boost::asio::cancellation_state state = co_await boost::asio::this_coro::cancellation_state;
  if (failure && state.cancelled() != boost::asio::cancellation_type::none) std::rethrow_exception(failure);
  if (failure || summary.text.empty()) {
    context.publish(desk::event_kind::kSessionCompactionFailed,
                    {{"error", failure ? "The summary failed: " + describe_exception(failure)
                                       : std::string("The summary came back empty.")},
                     {"input_tokens", used.tokens},
                     {"tokens_estimated", used.estimated}});
    co_return std::nullopt;
  }
  co_return summary.text;
}

void ModelTurnRunner::replace_older(std::size_t split, std::string opening_text) {
  json::array kept;
  json::object opening = text_message(opening_text);
  json::array& content = opening["content"].as_array();
  std::size_t first_kept = split;
  // The kept part may start with a user message: the opening joins it, so that user and
  // assistant still take turns.
  if (transcript_[first_kept].as_object().at("role") == "user") {
    const json::value& original = transcript_[first_kept].as_object().at("content");
    if (original.is_array()) {
      for (const auto& block : original.as_array()) content.push_back(block);
    } else if (original.is_string()) {
      content.push_back(json::object{{"type", "text"}, {"text", original}});
    }
    ++first_kept;
  }
  kept.push_back(std::move(opening));
  for (std::size_t index = first_kept; index < transcript_.size(); ++index) kept.push_back(transcript_[index]);
  // A long turn may pass its own message to the older part: the model still needs to know
  // what it is doing, word for word, not only as the summary retells it.
  // The message is a block of its own, beginning as it did, so the cutting below still
  // spares it and a later compaction finds it kept instead of putting it back again.
  if (!holds_text(kept, turn_message_)) {
    json::array& opening_content = kept.front().as_object()["content"].as_array();
    opening_content.insert(opening_content.begin() + 1,
                           {json::object{{"type", "text"}, {"text", "The request this turn works on:"}},
                            json::object{{"type", "text"}, {"text", turn_message_}}});
  }
  transcript_ = std::move(kept);
}

awaitable<void> ModelTurnRunner::compact(InputCount used, desk::TurnContext& context) {
  const std::size_t fixed = fixed_request_bytes();
  const std::size_t share_budget = message_budget(settings_.compaction_share * settings_.context_window_tokens, fixed);
  const std::size_t window_budget = message_budget(settings_.context_window_tokens, fixed);
  std::size_t summarised = 0;
  std::size_t dropped = 0;
  std::size_t texts_cut = 0;
  // 1. Summarise the older half; again while the session is still past the share (a
  //    turn's tool results can be many times the window).
  for (int pass = 0; pass < kMaximumPasses; ++pass) {
    if (pass > 0 && messages_bytes(transcript_) <= share_budget) break;
    const auto split = split_point(transcript_);
    if (!split) break;
    std::optional<std::string> summary = co_await summary_of(*split, used, context);
    if (!summary) break;
    replace_older(*split, "Summary of the earlier part of this session:\n" + capped(std::move(*summary), share_budget / 4));
    summarised += *split;
  }
  // 2. What summarising could not bound (one huge tool result, a kept half too long, a
  //    failed summary) is cut: the longest texts first, to half the share, so that the
  //    next rounds do not start past it again.
  if (messages_bytes(transcript_) > share_budget) {
    texts_cut += cut_longest_texts(transcript_, share_budget / 2, share_budget / 16, turn_message_);
  }
  // 3. Still past the window (summaries failing, many messages): older messages go,
  //    unsummarised, rather than a request the model cannot take and a session file that
  //    grows for ever. The turn's own message stays (replace_older).
  for (int pass = 0; pass < kMaximumPasses && messages_bytes(transcript_) > window_budget; ++pass) {
    const auto split = split_point(transcript_);
    if (!split) break;
    replace_older(*split, "[deskd: " + std::to_string(*split) +
                              " earlier messages were dropped without a summary to keep the session within the "
                              "model's context window.]");
    dropped += *split;
  }
  // 4. The last resort: any text, the turn's own message too, down to its marker.
  if (messages_bytes(transcript_) > window_budget) texts_cut += cut_longest_texts(transcript_, share_budget / 2, 0);
  if (summarised + dropped + texts_cut == 0) co_return;
  // The server's last count no longer describes the session.
  last_trusted_tokens_.reset();
  context.publish(desk::event_kind::kSessionCompacted, {{"messages_summarised", summarised},
                                                        {"messages_dropped", dropped},
                                                        {"texts_cut", texts_cut},
                                                        {"input_tokens", used.tokens},
                                                        {"tokens_estimated", used.estimated}});
}

}  // namespace deskd::model
