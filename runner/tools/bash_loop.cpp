#include "runner/tools/bash_loop.h"

#include <cstdio>

namespace deskd::tools {

std::string bash_loop_frame(std::string_view id, std::string_view command) {
  bool high_bytes = false;
  for (const char c : command) high_bytes = high_bytes || static_cast<unsigned char>(c) >= 0x80;
  std::string body;
  if (high_bytes) {
    // ASCII only, so that `read -N` counts bytes in any locale; `printf %b` decodes it.
    body.reserve(command.size() * 4);
    for (const char c : command) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte >= 0x80 || c == '\\') {
        char escaped[5];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
        body.append(escaped, 4);
      } else {
        body += c;
      }
    }
  }
  const std::string_view text = high_bytes ? std::string_view(body) : command;
  if (text.size() > 0xffffffffu) return {};
  char length[9];
  std::snprintf(length, sizeof length, "%08zx", text.size());
  std::string frame;
  frame.reserve(id.size() + 9 + text.size());
  frame.append(id).append(length, 8).push_back(high_bytes ? 'e' : 'r');
  frame.append(text);
  return frame;
}

BashLoopReport find_bash_loop_report(std::string_view reports, std::string_view id) {
  for (std::size_t at = reports.find(id); at != std::string_view::npos; at = reports.find(id, at + 1)) {
    std::size_t position = at + id.size();
    if (position >= reports.size() || reports[position] != ' ') continue;
    int status = 0;
    std::size_t digits = 0;
    for (++position; position < reports.size() && reports[position] >= '0' && reports[position] <= '9' && digits < 4;
         ++position, ++digits) {
      status = status * 10 + (reports[position] - '0');
    }
    if (digits > 0 && position < reports.size() && reports[position] == '\n') return {position + 1, status};
  }
  return {};
}

}  // namespace deskd::tools
