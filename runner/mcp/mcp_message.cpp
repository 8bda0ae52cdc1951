#include "runner/mcp/mcp_message.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "runner/tools/json_text.h"

namespace deskd::tools {
namespace {

namespace json = boost::json;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code unit of the `\uXXXX` escape whose 'u' is at `at`, or -1 when it is not one.
long escaped_unit(const std::string& text, std::size_t at) {
  if (at + 4 >= text.size() || text[at] != 'u') return -1;
  long unit = 0;
  for (std::size_t index = at + 1; index <= at + 4; ++index) {
    const int digit = hex_digit(text[index]);
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

bool is_leading_surrogate(long unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool is_trailing_surrogate(long unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

// One pass over the text, without recursion (so any depth is safe): it measures the
// nesting, replaces lone surrogate escapes by `\ufffd` (same length, in place), and notes
// the exact text of the few scalars whose text must survive (ids, the progress token).
// It trusts nothing: on broken JSON its findings are a best guess, used only to answer.
class Scanner {
 public:
  explicit Scanner(std::string& text) : text_(text) {}

  void run(McpMessage& message) {
    const std::size_t size = text_.size();
    for (std::size_t at = 0; at < size;) {
      const char c = text_[at];
      if (c == '"') {
        const std::size_t end = skip_string(at);
        if (in_object() && expect_key_[depth_]) {
          keys_[depth_] = text_.substr(at + 1, end - at - 2 + (end > size ? 1 : 0));
          expect_key_[depth_] = false;
        } else {
          capture(message, at, end);
        }
        at = end;
      } else if (c == '{' || c == '[') {
        ++depth_;
        maximum_depth_ = std::max(maximum_depth_, depth_);
        if (depth_ < kTracked) {
          kinds_[depth_] = c;
          expect_key_[depth_] = c == '{';
          keys_[depth_].clear();
        }
        ++at;
      } else if (c == '}' || c == ']') {
        if (depth_ > 0) --depth_;
        ++at;
      } else if (c == ',') {
        if (in_object()) expect_key_[depth_] = true;
        ++at;
      } else if (c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')) {
        std::size_t end = at;
        while (end < size && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '-' ||
                              text_[end] == '+' || text_[end] == '.')) {
          ++end;
        }
        if (c == '-' || (c >= '0' && c <= '9')) capture(message, at, end);
        at = end;
      } else {
        ++at;
      }
    }
  }

  std::size_t maximum_depth() const { return maximum_depth_; }

 private:
  static constexpr std::size_t kTracked = 4;  // levels whose keys are followed: 1..3

  bool in_object() const { return depth_ >= 1 && depth_ < kTracked && kinds_[depth_] == '{'; }

  // From the opening quote at `at`; returns the index after the closing quote (past the
  // end when there is none).
  std::size_t skip_string(std::size_t at) {
    const std::size_t size = text_.size();
    for (std::size_t index = at + 1; index < size;) {
      const char c = text_[index];
      if (c == '"') return index + 1;
      if (c != '\\') {
        ++index;
        continue;
      }
      const long unit = escaped_unit(text_, index + 1);
      if (is_leading_surrogate(unit) && index + 6 < size && text_[index + 6] == '\\' &&
          is_trailing_surrogate(escaped_unit(text_, index + 7))) {
        index += 12;  // a proper pair: one character beyond the Basic Multilingual Plane
      } else if (is_leading_surrogate(unit) || is_trailing_surrogate(unit)) {
        text_.replace(index + 2, 4, "fffd");
        index += 6;
      } else {
        index += unit >= 0 ? 6 : 2;
      }
    }
    return size + 1;
  }

  // A scalar (a string with its quotes, or a number) that ends before `end`.
  void capture(McpMessage& message, std::size_t at, std::size_t end) {
    if (end > text_.size()) return;  // an unterminated string is nobody's id
    std::string raw = text_.substr(at, end - at);
    if (depth_ == 1 && in_object() && keys_[1] == "id") {
      message.raw_id = std::move(raw);
    } else if (depth_ == 2 && kinds_[1] == '{' && in_object() && keys_[1] == "params" && keys_[2] == "requestId") {
      message.raw_request_id = std::move(raw);
    } else if (depth_ == 3 && kinds_[1] == '{' && kinds_[2] == '{' && in_object() && keys_[1] == "params" &&
               keys_[2] == "_meta" && keys_[3] == "progressToken") {
      message.raw_progress_token = std::move(raw);
    }
  }

  std::string& text_;
  std::size_t depth_ = 0;
  std::size_t maximum_depth_ = 0;
  std::array<char, kTracked> kinds_{};
  std::array<bool, kTracked> expect_key_{};
  std::array<std::string, kTracked> keys_;
};

// The raw text is kept only when it says exactly what the parser read there: a scanner's
// guess on odd input (duplicate keys, escaped key names) must never put a wrong id out.
void settle_raw(std::optional<std::string>& raw, const json::value* parsed) {
  if (parsed == nullptr || !(parsed->is_string() || parsed->is_number())) {
    raw.reset();
    return;
  }
  if (raw) {
    std::error_code error;
    const json::value reparsed = json::parse(*raw, error);
    if (!error && reparsed == *parsed) return;
  }
  raw = json::serialize(*parsed);
}

// For a refused message: the scanner's id, when it is at least a string or a number.
void keep_if_scalar(std::optional<std::string>& raw) {
  if (!raw) return;
  std::error_code error;
  const json::value parsed = json::parse(*raw, error);
  if (error || !(parsed.is_string() || parsed.is_number())) raw.reset();
}

const json::value* member(const json::value& value, std::string_view key) {
  return value.is_object() ? value.as_object().if_contains(key) : nullptr;
}

}  // namespace

McpMessage read_mcp_message(std::string text) {
  McpMessage message;
  text = valid_utf8(std::move(text));
  Scanner scanner(text);
  scanner.run(message);
  // What the scanner found is only a guess until the text parses; for a refused message
  // only the id is of use (to answer), and only when it looks like one.
  if (scanner.maximum_depth() > McpMessage::kMaximumDepth) {
    message.error = "the message is nested " + std::to_string(scanner.maximum_depth()) +
                    " levels deep; deskd takes at most " + std::to_string(McpMessage::kMaximumDepth) + ".";
    message.raw_request_id.reset();
    message.raw_progress_token.reset();
    keep_if_scalar(message.raw_id);
    return message;
  }
  std::error_code error;
  json::parse_options options;
  options.max_depth = McpMessage::kMaximumDepth;
  message.value = json::parse(text, error, {}, options);
  if (error) {
    message.value = nullptr;
    message.error = error.message() + ".";
    message.raw_request_id.reset();
    message.raw_progress_token.reset();
    keep_if_scalar(message.raw_id);
    return message;
  }
  const json::value* params = member(message.value, "params");
  settle_raw(message.raw_id, member(message.value, "id"));
  settle_raw(message.raw_request_id, params ? member(*params, "requestId") : nullptr);
  const json::value* meta = params ? member(*params, "_meta") : nullptr;
  settle_raw(message.raw_progress_token, meta ? member(*meta, "progressToken") : nullptr);
  return message;
}

std::string request_id_key(const std::string& raw) {
  if (raw.empty() || raw.front() != '"') return raw;
  std::error_code error;
  const json::value parsed = json::parse(raw, error);
  return error ? raw : json::serialize(parsed);
}

}  // namespace deskd::tools
