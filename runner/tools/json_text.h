#pragma once
// Text that goes out in a JSON reply (MCP, deskd shell --json). Tool output is nearly
// always valid UTF-8, but a file or a program may print anything, and invalid bytes would
// make the reply invalid JSON for a strict client.

#include <string>

namespace deskd::tools {

/// `text` with every invalid UTF-8 sequence replaced by U+FFFD; unchanged when valid.
std::string valid_utf8(std::string text);

}  // namespace deskd::tools
