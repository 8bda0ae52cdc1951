// deskctl: talks to a running deskd through its control socket.

#include <signal.h>

#include <string_view>
#include <vector>

#include "runner/deskctl/deskctl.h"

int main(int argc, char** argv) {
  // deskd going away mid-write is an error to report, not a reason to die silently.
  ::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string_view> arguments(argv + 1, argv + argc);
  return deskd::control::run_deskctl(arguments);
}
