#include "runner/tools/unified_diff.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace deskd::tools {
namespace {

constexpr std::size_t kContextLines = 3;
// Myers' search keeps O(D²) numbers for D edits; past this many it stops and shows the
// differing middle as one removal and one addition, still a correct diff, only longer.
constexpr int kMaximumEdits = 2000;

// Lines keep their '\n', so "x" at the end of a file and "x\n" differ, as they do for diff.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t newline = text.find('\n', start);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

enum class Step { keep, remove, add };

// The shortest edit script from `a` to `b` (Myers 1986, forward search with a trace),
// or an empty optional-like flag when it needs more than kMaximumEdits edits.
bool shortest_edit_script(const std::vector<int>& a, const std::vector<int>& b, std::vector<Step>& steps) {
  const int n = static_cast<int>(a.size());
  const int m = static_cast<int>(b.size());
  const int limit = std::min(n + m, kMaximumEdits);
  // trace[d][k + d] is the furthest x on diagonal k after d edits.
  std::vector<std::vector<int>> trace;
  std::vector<int> previous;
  int found = -1;
  for (int d = 0; d <= limit && found < 0; ++d) {
    std::vector<int> current(static_cast<std::size_t>(2 * d + 1));
    const auto at = [&](const std::vector<int>& row, int row_d, int k) {
      return row[static_cast<std::size_t>(k + row_d)];
    };
    for (int k = -d; k <= d; k += 2) {
      int x = 0;
      if (d == 0) {
        x = 0;
      } else if (k == -d || (k != d && at(previous, d - 1, k - 1) < at(previous, d - 1, k + 1))) {
        x = at(previous, d - 1, k + 1);
      } else {
        x = at(previous, d - 1, k - 1) + 1;
      }
      int y = x - k;
      while (x < n && y < m && a[static_cast<std::size_t>(x)] == b[static_cast<std::size_t>(y)]) ++x, ++y;
      current[static_cast<std::size_t>(k + d)] = x;
      if (x >= n && y >= m) found = d;
    }
    trace.push_back(current);
    previous = std::move(current);
  }
  if (found < 0) return false;

  std::vector<Step> reversed;
  int x = n;
  int y = m;
  for (int d = found; d > 0; --d) {
    const auto& row = trace[static_cast<std::size_t>(d - 1)];
    const auto at = [&](int k) { return row[static_cast<std::size_t>(k + d - 1)]; };
    const int k = x - y;
    const bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
    const int previous_k = down ? k + 1 : k - 1;
    const int previous_x = at(previous_k);
    const int previous_y = previous_x - previous_k;
    while (x > previous_x && y > previous_y) reversed.push_back(Step::keep), --x, --y;
    reversed.push_back(down ? Step::add : Step::remove);
    x = previous_x;
    y = previous_y;
  }
  while (x > 0 && y > 0) reversed.push_back(Step::keep), --x, --y;
  steps.assign(reversed.rbegin(), reversed.rend());
  return true;
}

std::string range(std::size_t lines_before, std::size_t count) {
  // diff's convention: an empty range names the line before it; a one-line range has no count.
  std::string text = std::to_string(count == 0 ? lines_before : lines_before + 1);
  if (count != 1) text += "," + std::to_string(count);
  return text;
}

void append_line(std::string& out, char prefix, std::string_view line) {
  out += prefix;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

// A header's file name as git writes it: as it is, or in double quotes with C escapes when
// it holds a control byte, a quote or a backslash (GNU patch reads both). A desk chooses the
// name; a newline in it must not end the header line and start a line of the diff.
std::string header_name(std::string_view prefix, std::string_view label) {
  const std::string name = std::string(prefix) + std::string(label);
  const bool plain = std::none_of(name.begin(), name.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7F || c == '"' || c == '\\';
  });
  if (plain) return name;
  std::string quoted = "\"";
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\n': quoted += "\\n"; break;
      case '\t': quoted += "\\t"; break;
      case '\r': quoted += "\\r"; break;
      case '"': quoted += "\\\""; break;
      case '\\': quoted += "\\\\"; break;
      default:
        if (byte < 0x20 || byte == 0x7F) {
          quoted += '\\';
          quoted += static_cast<char>('0' + (byte >> 6));
          quoted += static_cast<char>('0' + ((byte >> 3) & 7));
          quoted += static_cast<char>('0' + (byte & 7));
        } else {
          quoted += c;
        }
    }
  }
  return quoted + "\"";
}

}  // namespace

std::string unified_diff(std::string_view old_text, std::string_view new_text, std::string_view label) {
  if (old_text == new_text) return {};
  if (old_text.size() > kMaximumDiffBytes || new_text.size() > kMaximumDiffBytes) {
    return std::string(kDiffTooLarge);
  }
  const auto old_lines = split_lines(old_text);
  const auto new_lines = split_lines(new_text);
  if (old_lines.size() > kMaximumDiffLines || new_lines.size() > kMaximumDiffLines) {
    return std::string(kDiffTooLarge);
  }

  // Equal lines get equal numbers, so the search compares integers, not strings.
  std::unordered_map<std::string_view, int> numbers;
  const auto number_all = [&](const std::vector<std::string_view>& lines) {
    std::vector<int> numbered;
    numbered.reserve(lines.size());
    for (const auto line : lines) {
      numbered.push_back(numbers.emplace(line, static_cast<int>(numbers.size())).first->second);
    }
    return numbered;
  };
  const auto a = number_all(old_lines);
  const auto b = number_all(new_lines);

  // A common start and end are kept as they are; the search runs on the middle only.
  std::size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  const std::vector<int> middle_a(a.begin() + static_cast<std::ptrdiff_t>(prefix),
                                  a.end() - static_cast<std::ptrdiff_t>(suffix));
  const std::vector<int> middle_b(b.begin() + static_cast<std::ptrdiff_t>(prefix),
                                  b.end() - static_cast<std::ptrdiff_t>(suffix));
  std::vector<Step> middle;
  if (!shortest_edit_script(middle_a, middle_b, middle)) {
    middle.assign(middle_a.size(), Step::remove);
    middle.insert(middle.end(), middle_b.size(), Step::add);
  }
  std::vector<Step> steps(prefix, Step::keep);
  steps.insert(steps.end(), middle.begin(), middle.end());
  steps.insert(steps.end(), suffix, Step::keep);

  // Old and new line index before each step.
  std::vector<std::size_t> old_at(steps.size() + 1);
  std::vector<std::size_t> new_at(steps.size() + 1);
  for (std::size_t index = 0; index < steps.size(); ++index) {
    old_at[index + 1] = old_at[index] + (steps[index] != Step::add ? 1 : 0);
    new_at[index + 1] = new_at[index] + (steps[index] != Step::remove ? 1 : 0);
  }

  std::string out = "--- " + header_name("a/", label) + "\n+++ " + header_name("b/", label) + "\n";
  std::size_t index = 0;
  while (index < steps.size()) {
    while (index < steps.size() && steps[index] == Step::keep) ++index;
    if (index == steps.size()) break;
    const std::size_t begin = index >= kContextLines ? index - kContextLines : 0;
    // Extend the hunk while the next change is close enough that their contexts would touch.
    std::size_t last_change = index;
    std::size_t scan = index;
    while (scan < steps.size()) {
      if (steps[scan] != Step::keep) {
        last_change = scan;
        ++scan;
        continue;
      }
      std::size_t run_end = scan;
      while (run_end < steps.size() && steps[run_end] == Step::keep) ++run_end;
      if (run_end == steps.size() || run_end - scan > 2 * kContextLines) break;
      scan = run_end;
    }
    const std::size_t end = std::min(steps.size(), last_change + 1 + kContextLines);

    out += "@@ -" + range(old_at[begin], old_at[end] - old_at[begin]) + " +" +
           range(new_at[begin], new_at[end] - new_at[begin]) + " @@\n";
    for (std::size_t step = begin; step < end; ++step) {
      switch (steps[step]) {
        case Step::keep: append_line(out, ' ', old_lines[old_at[step]]); break;
        case Step::remove: append_line(out, '-', old_lines[old_at[step]]); break;
        case Step::add: append_line(out, '+', new_lines[new_at[step]]); break;
      }
    }
    index = end;
  }
  return out;
}

}  // namespace deskd::tools
