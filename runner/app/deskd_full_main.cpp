// deskd-full: runs AI-agent desks in kernel sandboxes. Every command of deskd, each in its
// own file, under one parser (deskd_command_line.cpp); the lean deskd (deskd_main.cpp) runs
// `deskd sandbox` itself and executes this for the others, with its own arguments (argv[0]
// stays "deskd").

#include <string>
#include <vector>

#include "runner/app/deskd_command.h"

int main(int argc, char** argv) {
  return deskd::app::run_deskd_command_line(std::vector<std::string>(argv + 1, argv + argc));
}
