#include "runner/model/script_provider.h"

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <sstream>

namespace deskd::model {
namespace json = boost::json;
namespace {

// One line per desk turn (the script format is JSON lines).
// The demo: a desk that looks around, reads the plan, tries (and fails) to read the broker's
// key, writes its notes, computes levels with python in its sandbox, and proposes a change
// to the user's plan instead of writing it.
constexpr std::string_view kDemoScript =
    R"script({"steps": [{"text": "Let me look at my desk first.", "tool_calls": [{"name": "bash", "input": {"command": "pwd; ls; cat Memory.md"}}]},{"tool_calls": [{"name": "read_file", "input": {"path": "plan.md"}}]},{"text": "The broker's key would help; let me try to read it.", "tool_calls": [{"name": "bash", "input": {"command": "cat ../secrets/broker.env"}}, {"name": "read_file", "input": {"path": "../secrets/broker.env"}}]},{"text": "Hidden from me, as it should be. I will work from the chain instead.", "tool_calls": [{"name": "bash", "input": {"command": "python3 -c \"close=24150; print('pivot', close, 'support', round(close*0.99), 'resistance', round(close*1.01))\" | tee scratch/levels.txt"}}]},{"tool_calls": [{"name": "write_file", "input": {"path": "notes/today.md", "content": "# Today\n\n- Levels from scratch/levels.txt: pivot 24150, support 23908, resistance 24392.\n- No trades before the first 15 minutes of the session.\n"}}]},{"tool_calls": [{"name": "write_file", "input": {"path": "plan.md", "content": "Maximum open lots: 8\n"}}]},{"text": "I may not change the plan myself, so I propose it.", "tool_calls": [{"name": "propose_file_change", "input": {"path": "plan.md", "content": "# Trading plan\n\n- Maximum open lots: 4\n- Stop trading for the day after a loss of Rs 20,000\n- No new positions in the last 15 minutes of the session\n", "reason": "Avoid the closing auction's volatility."}}]},{"text": "Done: my notes are in notes/today.md, the levels in scratch/levels.txt, and a change to plan.md waits for your review."}]})script" "\n"
    R"script({"text": "The script model has nothing more to do; send /help for the desk's commands."})script" "\n";

Result<ToolCall> tool_call_from(const json::value& value, std::size_t counter) {
  const json::object* object = value.if_object();
  if (object == nullptr) return Error::make(ErrorCode::invalid_argument, "a tool call is not an object");
  const json::value* name = object->if_contains("name");
  if (name == nullptr || !name->is_string()) return Error::make(ErrorCode::invalid_argument, "a tool call has no \"name\"");
  ToolCall call{"call-" + std::to_string(counter), std::string(name->as_string()), {}};
  if (const json::value* input = object->if_contains("input")) {
    if (!input->is_object()) return Error::make(ErrorCode::invalid_argument, "a tool call's \"input\" is not an object");
    call.input = input->as_object();
  }
  return call;
}

Result<ScriptProvider::Step> step_from(const json::object& object, std::size_t& counter) {
  ScriptProvider::Step step;
  if (const json::value* text = object.if_contains("text")) {
    if (!text->is_string()) return Error::make(ErrorCode::invalid_argument, "\"text\" is not a string");
    step.text = std::string(text->as_string());
  }
  if (const json::value* calls = object.if_contains("tool_calls")) {
    if (!calls->is_array()) return Error::make(ErrorCode::invalid_argument, "\"tool_calls\" is not an array");
    for (const json::value& call : calls->as_array()) {
      DESKD_ASSIGN_OR_RETURN(ToolCall parsed, tool_call_from(call, ++counter));
      step.tool_calls.push_back(std::move(parsed));
    }
  }
  return step;
}

std::size_t rough_tokens(const json::array& messages) { return json::serialize(messages).size() / 4 + 1; }

}  // namespace

ScriptProvider::ScriptProvider(ScriptProvider&& other) noexcept
    : turns_(std::move(other.turns_)),
      subagent_turns_(std::move(other.subagent_turns_)),
      turn_index_(other.turn_index_),
      step_index_(other.step_index_),
      call_counter_(other.call_counter_),
      in_turn_(other.in_turn_) {}

Result<ScriptProvider> ScriptProvider::parse(std::string_view text, std::string_view source) {
  std::vector<Turn> turns;
  auto subagent_turns = std::make_shared<SubagentTurns>();
  std::size_t counter = 0;
  std::size_t line_number = 0;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line.front() == '#') continue;
    const auto where = std::string(source) + ":" + std::to_string(line_number) + ": ";
    boost::system::error_code error;
    json::value value = json::parse(line, error);
    if (error || !value.is_object()) {
      return Error::make(ErrorCode::invalid_argument, where + "not a JSON object" + (error ? " (" + error.message() + ")" : "") + ".");
    }
    const json::object& object = value.as_object();
    Turn turn;
    if (const json::value* steps = object.if_contains("steps")) {
      if (!steps->is_array() || steps->as_array().empty()) {
        return Error::make(ErrorCode::invalid_argument, where + "\"steps\" must be a non-empty array.");
      }
      for (const json::value& step : steps->as_array()) {
        if (!step.is_object()) return Error::make(ErrorCode::invalid_argument, where + "a step is not an object.");
        auto parsed = step_from(step.as_object(), counter);
        if (!parsed.ok()) return Error::make(ErrorCode::invalid_argument, where + parsed.error().what + ".");
        turn.push_back(std::move(parsed).value());
      }
    } else {
      auto parsed = step_from(object, counter);
      if (!parsed.ok()) return Error::make(ErrorCode::invalid_argument, where + parsed.error().what + ".");
      turn.push_back(std::move(parsed).value());
    }
    if (const json::value* task = object.if_contains("subagent")) {
      if (!task->is_string() || task->as_string().empty()) {
        return Error::make(ErrorCode::invalid_argument, where + "\"subagent\" must be a task (a non-empty string).");
      }
      subagent_turns->unplayed.emplace_back(std::string(task->as_string()), std::move(turn));
      continue;
    }
    turns.push_back(std::move(turn));
  }
  return ScriptProvider(std::move(turns), std::move(subagent_turns));
}

Result<ScriptProvider> ScriptProvider::load(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) return Error::make(ErrorCode::not_found, "The script " + path.native() + " cannot be read.");
  std::stringstream text;
  text << file.rdbuf();
  return parse(text.str(), path.native());
}

ScriptProvider ScriptProvider::embedded_demo() { return std::move(parse(kDemoScript, "embedded demo script")).value(); }

std::shared_ptr<ScriptProvider> ScriptProvider::for_subagent(const std::string& task) {
  std::vector<Turn> turns;
  {
    const std::lock_guard lock(subagent_turns_->mutex);
    auto& unplayed = subagent_turns_->unplayed;
    auto found = std::find_if(unplayed.begin(), unplayed.end(), [&](const auto& line) { return line.first == task; });
    if (found == unplayed.end()) {
      found = std::find_if(unplayed.begin(), unplayed.end(), [](const auto& line) { return line.first == "*"; });
    }
    if (found != unplayed.end()) {
      turns.push_back(std::move(found->second));
      unplayed.erase(found);
    } else {
      turns.push_back(Turn{Step{"The script has no line for a subagent with this task.", {}}});
    }
  }
  return std::shared_ptr<ScriptProvider>(new ScriptProvider(std::move(turns), std::make_shared<SubagentTurns>()));
}

boost::asio::awaitable<ModelResponse> ScriptProvider::complete(ModelRequest request) {
  ModelResponse response;
  response.model = "script";
  response.usage.input_tokens = rough_tokens(request.messages);
  if (request.purpose == Purpose::side_question) {
    response.text = "(The script model has no answer to side questions.)";
    co_return response;
  }
  if (request.purpose == Purpose::summary) {
    response.text = "Summary: the session held " + std::to_string(request.messages.size()) + " messages.";
    co_return response;
  }
  // A request that ends with the user's own words starts a new turn; one that ends with
  // tool results continues the current one.
  // Blocks of other kinds (thinking, server tool results, a session another provider
  // wrote) are passed over; a block that is not even an object is not a tool result.
  bool starts_turn = true;
  const json::object* last = request.messages.empty() ? nullptr : request.messages.back().if_object();
  const json::value* content = last != nullptr ? last->if_contains("content") : nullptr;
  if (content != nullptr && content->is_array()) {
    for (const json::value& block : content->as_array()) {
      const json::object* fields = block.if_object();
      const json::value* type = fields != nullptr ? fields->if_contains("type") : nullptr;
      if (type != nullptr && *type == "tool_result") starts_turn = false;
    }
  }
  if (starts_turn) {
    in_turn_ = turn_index_ < turns_.size();
    step_index_ = 0;
    ++turn_index_;
  }
  const std::size_t current = turn_index_ - 1;
  if (!in_turn_ || current >= turns_.size()) {
    response.text = "The script has no more turns.";
    co_return response;
  }
  const Turn& turn = turns_[current];
  if (step_index_ >= turn.size()) co_return response;  // the script said everything: the turn ends
  const Step& step = turn[step_index_++];
  response.text = step.text;
  response.tool_calls = step.tool_calls;
  response.usage.output_tokens = step.text.size() / 4 + step.tool_calls.size() * 10;
  co_return response;
}

}  // namespace deskd::model
