#include "runner/model/context_budget.h"

#include <boost/json.hpp>

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

namespace deskd::model {
namespace json = boost::json;

// Why 4 bytes a token: BPE tokenizers (cl100k, o200k, Claude's, Llama's) give about four
// bytes of English text per token and fewer for code; the serialized request we measure
// also holds JSON keys, quotes and escapes that no server counts as tokens, which leans
// the estimate high; and the compaction share (0.8 by default) leaves the rest of the
// window as a margin. Text that tokenizes worse (CJK, base64) can pass the share before
// the estimate does, but not the window.
//
// Why under a quarter of the estimate is implausible: that would be more than 16 bytes of
// request per token, which no tokenizer gives for real text. A server that says so is not
// counting this request (a local server that reports only part of it, or a constant);
// believing it would let the session grow without bound.
namespace {

constexpr std::uint64_t kImplausibleUnderCount = 4;
// Room left for the marker when a text is cut, so that a cut text is not picked again.
constexpr std::size_t kMarkerRoom = 128;

std::string cut_middle(std::string_view text, std::size_t keep) {
  std::size_t head = keep / 2;
  while (head > 0 && (static_cast<unsigned char>(text[head]) & 0xC0) == 0x80) --head;  // whole characters
  std::size_t tail_start = text.size() - (keep - keep / 2);
  while (tail_start < text.size() && (static_cast<unsigned char>(text[tail_start]) & 0xC0) == 0x80) ++tail_start;
  const std::size_t removed = tail_start - head;
  std::string result(text.substr(0, head));
  result += "\n[... deskd cut " + std::to_string(removed) +
            " bytes here to keep the session within the model's context window ...]\n";
  result += text.substr(tail_start);
  return result;
}

void add_string(json::value* value, std::vector<json::string*>& texts) {
  if (value != nullptr && value->is_string()) texts.push_back(&value->as_string());
}

// Every text of `messages` that may be cut: not thinking blocks (their signature covers
// them) nor anything of a block deskd does not know.
std::vector<json::string*> cuttable_texts(json::array& messages) {
  std::vector<json::string*> texts;
  for (json::value& message : messages) {
    json::object* object = message.if_object();
    json::value* content = object != nullptr ? object->if_contains("content") : nullptr;
    if (content == nullptr) continue;
    add_string(content, texts);
    if (!content->is_array()) continue;
    for (json::value& block_value : content->as_array()) {
      json::object* block = block_value.if_object();
      const json::value* type = block != nullptr ? block->if_contains("type") : nullptr;
      if (type == nullptr || !type->is_string()) continue;
      if (*type == "text") add_string(block->if_contains("text"), texts);
      if (*type == "tool_result") {
        json::value* result = block->if_contains("content");
        add_string(result, texts);
        if (result != nullptr && result->is_array()) {
          for (json::value& inner : result->as_array()) {
            if (inner.is_object() && inner.as_object().if_contains("type") != nullptr && inner.at("type") == "text") {
              add_string(inner.as_object().if_contains("text"), texts);
            }
          }
        }
      }
      if (*type == "tool_use") {
        json::value* input = block->if_contains("input");
        if (input != nullptr && input->is_object()) {
          for (auto& argument : input->as_object()) add_string(&argument.value(), texts);
        }
      }
    }
  }
  return texts;
}

// The beginning by which a text is recognised after cut_middle kept its head.
std::string_view spared_start(const std::string& text) { return std::string_view(text).substr(0, 200); }

}  // namespace

std::size_t messages_bytes(const json::array& messages) { return json::serialize(messages).size(); }

std::size_t request_bytes(const ModelRequest& request) {
  std::size_t bytes = request.system.size() + messages_bytes(request.messages);
  for (const ToolSpec& tool : request.tools) {
    bytes += tool.name.size() + tool.description.size() + json::serialize(tool.input_schema).size();
  }
  return bytes;
}

std::uint64_t estimated_tokens(std::size_t bytes) { return (bytes + kBytesPerToken - 1) / kBytesPerToken; }

InputCount counted_input(const ModelResponse& response, std::uint64_t estimate) {
  const std::uint64_t reported =
      response.usage.input_tokens + response.usage.cache_read_tokens + response.usage.cache_write_tokens;
  if (response.usage_reported && reported * kImplausibleUnderCount >= estimate) return {reported, false};
  return {std::max(reported, estimate), true};
}

std::size_t cut_longest_texts(json::array& messages, std::size_t budget_bytes, std::size_t floor_bytes,
                              const std::string& spared) {
  std::vector<json::string*> texts = cuttable_texts(messages);
  if (!spared.empty()) {
    const std::string_view start = spared_start(spared);
    std::erase_if(texts, [start](const json::string* text) { return std::string_view(*text).starts_with(start); });
  }
  std::set<const json::string*> cut;
  // Each pass cuts one text by the whole excess or down to its floor; escapes can leave a
  // little over, so a text may be cut twice, never more often than this bound allows.
  for (std::size_t pass = 0; pass < 2 * texts.size() + 2; ++pass) {
    const std::size_t total = messages_bytes(messages);
    if (total <= budget_bytes) break;
    json::string* longest = nullptr;
    for (json::string* text : texts) {
      if (text->size() > floor_bytes + kMarkerRoom && (longest == nullptr || text->size() > longest->size())) longest = text;
    }
    if (longest == nullptr) break;
    const std::size_t excess = total - budget_bytes + kMarkerRoom;
    const std::size_t keep = std::max(floor_bytes, longest->size() > excess ? longest->size() - excess : 0);
    *longest = cut_middle(std::string_view(longest->data(), longest->size()), keep);
    cut.insert(longest);
  }
  return cut.size();
}

bool holds_text(const json::array& messages, const std::string& text) {
  if (text.empty()) return true;
  const std::string_view start = spared_start(text);
  auto starts = [&start](const json::value* value) {
    return value != nullptr && value->is_string() && std::string_view(value->as_string()).starts_with(start);
  };
  for (const json::value& message : messages) {
    const json::object* object = message.if_object();
    const json::value* content = object != nullptr ? object->if_contains("content") : nullptr;
    if (starts(content)) return true;
    if (content == nullptr || !content->is_array()) continue;
    for (const json::value& block : content->as_array()) {
      if (block.is_object() && block.as_object().if_contains("type") != nullptr && block.at("type") == "text" &&
          starts(block.as_object().if_contains("text"))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace deskd::model
