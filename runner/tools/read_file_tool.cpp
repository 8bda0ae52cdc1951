// read_file: streams the file once, keeping only the lines of the window, so a file of any
// size costs at most one window of memory.

#include <unistd.h>

#include <algorithm>
#include <boost/json/object.hpp>
#include <cerrno>
#include <cstring>
#include <optional>

#include "base/utf8_text.h"
#include "policy/safe_file.h"
#include "runner/tools/file_tool_support.h"
#include "runner/tools/file_tools.h"
#include "runner/tools/tool_input.h"

namespace deskd::tools {
namespace {

using detail::shown;

constexpr std::size_t kChunkBytes = 64 * 1024;
// After the window, lines are only counted, for the "of N" in the note; past this many
// more bytes the count is given up rather than read a huge file to its end.
constexpr std::size_t kCountingBytes = 64 * 1024 * 1024;

std::string numbered(std::uint64_t number, std::string_view line) {
  // `cat -n`: the number right-aligned in six columns, a tab, the line.
  std::string text = std::to_string(number);
  if (text.size() < 6) text.insert(0, 6 - text.size(), ' ');
  text += '\t';
  text += line;
  text += '\n';
  return text;
}

// Collects the window while the file streams past, one piece (at most one line) at a time.
class WindowCollector {
 public:
  WindowCollector(std::uint64_t first_line, std::uint64_t line_limit)
      : first_line_(first_line), line_limit_(line_limit) {}

  /// Takes the next bytes of the file; false once nothing more is needed.
  bool consume(std::string_view bytes) {
    while (!bytes.empty()) {
      if (window_closed_ && bytes_seen_ >= ReadFileTool::kBinaryProbeBytes) {
        // Only counting now; memchr-speed, nothing kept.
        newlines_ += static_cast<std::uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
        line_has_bytes_ = bytes.back() != '\n';
        counted_bytes_ += bytes.size();
        bytes_seen_ += bytes.size();
        validated_to_end_ = false;
        return counted_bytes_ < kCountingBytes;
      }
      const std::size_t newline = bytes.find('\n');
      const std::size_t length = newline == std::string_view::npos ? bytes.size() : newline + 1;
      take_piece(bytes.substr(0, length));
      bytes.remove_prefix(length);
    }
    return true;
  }

  /// The end of the file: a last line without a newline still counts.
  void finish() {
    if (line_has_bytes_) end_line();
    line_has_bytes_ = false;
    reached_end_ = true;
  }

  bool binary() const {
    if (nul_found_ || !validator_.valid_so_far()) return true;
    // A sequence cut off by the end of the file is invalid; one cut off by where checking
    // stopped is not.
    return reached_end_ && validated_to_end_ && !validator_.complete();
  }

  /// Lines in the file, when it was read (or counted) to its end.
  std::optional<std::uint64_t> total_lines() const {
    if (!reached_end_) return std::nullopt;
    return newlines_ + (line_has_bytes_ ? 1 : 0);
  }

  std::string render(std::string_view requested) const {
    std::string text = shown_;
    const auto total = total_lines();
    const std::uint64_t last = first_line_ + shown_count_ - 1;
    const bool more = more_lines();
    if (!more && cut_line_ == 0) return text;
    std::string note;
    if (cut_line_ != 0) {
      note = "Line " + std::to_string(cut_line_) + " is longer than 256 KiB, so only its first " +
             std::to_string(cut_bytes_) + " bytes are shown; use bash to see the rest of it.";
    } else {
      note = "Showing lines " + std::to_string(first_line_) + "-" + std::to_string(last);
      note += total.has_value() ? " of " + std::to_string(*total) : "; the file goes on";
      if (byte_limited_) note += " (a window holds at most 256 KiB)";
      note += ".";
    }
    if (more) note += " To read more of " + shown(requested) + ", call read_file with offset " +
                      std::to_string(next_line_) + ".";
    return text + "\n(" + note + ")\n";
  }

  std::uint64_t shown_count() const { return shown_count_; }
  /// Whether lines, or part of one, were left out after the window.
  bool left_out() const { return cut_line_ != 0 || more_lines(); }

 private:
  std::uint64_t line_number() const { return newlines_ + 1; }
  bool more_lines() const {
    const auto total = total_lines();
    return !reached_end_ || (total.has_value() && next_line_ <= *total);
  }
  bool in_window() const { return !window_closed_ && line_number() >= first_line_; }

  void take_piece(std::string_view piece) {
    const std::size_t probe_left =
        bytes_seen_ < ReadFileTool::kBinaryProbeBytes ? ReadFileTool::kBinaryProbeBytes - bytes_seen_ : 0;
    if (std::memchr(piece.data(), '\0', std::min(probe_left, piece.size())) != nullptr) nul_found_ = true;
    // Every byte up to the end of the window and of the probe is checked, nothing after.
    validated_to_end_ = !window_closed_ || probe_left > 0;
    if (validated_to_end_) validator_.feed(piece);
    bytes_seen_ += piece.size();

    const bool ends_line = piece.back() == '\n';
    const std::string_view content = ends_line ? piece.substr(0, piece.size() - 1) : piece;
    if (in_window()) {
      // Kept only up to the window's room (plus one byte, to know it overflowed).
      const std::size_t room = ReadFileTool::kWindowBytes - shown_bytes_ + 1;
      if (line_.size() < room) line_.append(content.substr(0, room - line_.size()));
    }
    line_has_bytes_ = !ends_line;
    if (ends_line) end_line();
  }

  void end_line() {
    const std::uint64_t number = line_number();
    ++newlines_;
    if (window_closed_ || number < first_line_) return;
    const std::size_t room = ReadFileTool::kWindowBytes - shown_bytes_;
    if (line_.size() > room) {
      if (shown_count_ == 0) {
        // A single line longer than a whole window: show its start rather than nothing.
        const auto start = utf8_prefix(line_, room);
        shown_ += numbered(number, start);
        shown_count_ = 1;
        cut_line_ = number;
        cut_bytes_ = start.size();
        next_line_ = number + 1;
      } else {
        byte_limited_ = true;
        next_line_ = number;
      }
      close_window();
      return;
    }
    shown_ += numbered(number, line_);
    shown_bytes_ += line_.size();
    ++shown_count_;
    line_.clear();
    next_line_ = number + 1;
    if (shown_count_ >= line_limit_) close_window();
  }

  void close_window() {
    window_closed_ = true;
    line_.clear();
    line_.shrink_to_fit();
  }

  const std::uint64_t first_line_;
  const std::uint64_t line_limit_;
  std::uint64_t newlines_ = 0;
  std::uint64_t bytes_seen_ = 0;
  std::uint64_t counted_bytes_ = 0;
  bool line_has_bytes_ = false;
  bool reached_end_ = false;
  bool nul_found_ = false;
  bool validated_to_end_ = true;
  Utf8Validator validator_;

  bool window_closed_ = false;
  std::string line_;
  std::string shown_;
  std::size_t shown_bytes_ = 0;
  std::uint64_t shown_count_ = 0;
  std::uint64_t next_line_ = 0;
  std::uint64_t cut_line_ = 0;
  std::size_t cut_bytes_ = 0;
  bool byte_limited_ = false;
};

}  // namespace

std::string_view ReadFileTool::description() const {
  return "Reads a text file and returns its lines numbered like `cat -n`. Any file may be read "
         "except hidden secrets; a relative path starts at your desk folder. At most 2000 lines "
         "(or 256 KiB) come back at a time, with a note saying which lines were shown; use "
         "offset and limit to read further. Binary files are refused.";
}

std::string_view ReadFileTool::input_schema() const {
  return R"({"type":"object","properties":{)"
         R"("path":{"type":"string","description":"The file to read; a relative path starts at your desk folder."},)"
         R"("offset":{"type":"integer","minimum":1,"description":"The first line to show, counting from 1. Default 1."},)"
         R"("limit":{"type":"integer","minimum":1,"description":"How many lines to show. Default 2000."}},)"
         R"("required":["path"]})";
}

ToolResult ReadFileTool::run(const boost::json::object& input) const {
  const ToolInput fields(name(), input);
  auto requested = fields.required_string("path");
  if (!requested.ok()) return detail::failure(requested.error());
  auto offset = fields.optional_count("offset");
  if (!offset.ok()) return detail::failure(offset.error());
  auto limit = fields.optional_count("limit");
  if (!limit.ok()) return detail::failure(limit.error());

  auto resolved = context().policy.readable(*requested);
  if (!resolved.ok()) return context().policy_failure(resolved.error(), *requested, "read");
  auto file = policy::SafeFile::open_for_reading(*resolved, *context().calls);
  if (!file.ok()) return detail::failure(detail::opening_error(file.error(), *requested, *resolved, detail::Purpose::read_file, *context().calls));

  const std::uint64_t first_line = offset->value_or(1);
  WindowCollector window(first_line, limit->value_or(kDefaultWindowLines));
  std::string buffer(kChunkBytes, '\0');
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(file->get(), buffer.data(), buffer.size()); });
    if (count < 0) return detail::failure(Error::from_errno(errno, "Reading " + shown(*requested) + " failed"));
    if (count == 0) {
      window.finish();
      break;
    }
    if (!window.consume(std::string_view(buffer.data(), static_cast<std::size_t>(count)))) break;
  }

  if (window.binary()) {
    return ToolResult::failure(shown(*requested) +
                               " is a binary file, not UTF-8 text, so read_file does not show it; "
                               "inspect it with bash (file, xxd, strings) instead.");
  }
  const auto total = window.total_lines();
  if (total.has_value() && *total == 0) return ToolResult::success(shown(*requested) + " is empty.");
  if (window.shown_count() == 0) {
    return ToolResult::failure(shown(*requested) + " has " + std::to_string(total.value_or(0)) +
                               " lines; offset " + std::to_string(first_line) + " is past its end.");
  }
  ToolResult result = ToolResult::success(window.render(*requested));
  result.truncated = window.left_out();
  return result;
}

}  // namespace deskd::tools
