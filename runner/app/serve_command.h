#pragma once
// `deskd serve --config F`: the daemon.

#include <span>
#include <string_view>

namespace deskd::app {

extern const char* const kServeUsage;
int run_serve_command(std::span<const std::string_view> arguments);

}  // namespace deskd::app
