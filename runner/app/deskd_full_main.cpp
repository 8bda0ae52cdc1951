// deskd-full: runs AI-agent desks in kernel sandboxes. Every command of deskd, each in its
// own file; the lean deskd (deskd_main.cpp) runs `deskd sandbox` itself and executes this
// for the others, with its own arguments (argv[0] stays "deskd").

#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "runner/app/config.h"
#include "runner/app/doctor_command.h"
#include "runner/app/mcp_command.h"
#include "runner/app/policy_command.h"
#include "runner/app/run_command.h"
#include "runner/app/sandbox_command.h"
#include "runner/app/serve_command.h"
#include "runner/app/shell_command.h"
#include "sandbox/seccomp_profile.h"

namespace {

constexpr const char* kUsage =
    "usage: deskd COMMAND [ARGS...]\n"
    "\n"
    "Commands:\n"
    "  check      check the daemon's config file and list every problem in it\n"
    "  doctor     say which isolation this host supports, and how to fix what is missing\n"
    "  mcp        serve a desk's tools as a Model Context Protocol server on stdio\n"
    "  policy     answer what a desk's file tools may read or write\n"
    "  run        run one turn of a desk on the built-in script model\n"
    "  sandbox    run a command once in a desk's sandbox\n"
    "  serve      run every desk of a config and serve deskctl on the control socket\n"
    "  shell      type commands into a desk's sandboxed bash (or call its tools as JSON)\n"
    "\n"
    "Options:\n"
    "  -h, --help     show this help\n"
    "  --version      show the version\n"
    "\n"
    "Run 'deskd COMMAND --help' for a command's own options.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> arguments(argv + 1, argv + argc);
  if (arguments.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string_view command = arguments.front();
  const std::span<const std::string_view> rest(arguments.begin() + 1, arguments.end());
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "--version") {
    std::puts("deskd " DESKD_VERSION);
    return 0;
  }
  if (command == "check") return deskd::app::run_check_command(rest);
  if (command == "doctor") return deskd::app::run_doctor_command(rest);
  if (command == "run") return deskd::app::run_run_command(rest);
  if (command == "policy") return deskd::app::run_policy_command(rest);
  if (command == "sandbox") return deskd::app::run_sandbox_command(rest, &deskd::sandbox::describe_seccomp_profile);
  if (command == "serve") return deskd::app::run_serve_command(rest);
  if (command == "shell") return deskd::app::run_shell_command(rest);
  if (command == "mcp") return deskd::app::run_mcp_command(rest);
  std::fprintf(stderr, "deskd: unknown command '%.*s'\n\n%s", static_cast<int>(command.size()),
               command.data(), kUsage);
  return 2;
}
