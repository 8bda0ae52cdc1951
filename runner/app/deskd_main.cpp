// deskd's entry point, kept lean. `deskd sandbox` — a one-shot sandbox, where what a caller
// waits for is mostly start-up — runs here, in a program linked against base, policy and
// sandbox only: no OpenSSL, toml++, Beast, spdlog or libsystemd to load and initialise, and
// not even libseccomp (the BPF program is compiled in; --print-seccomp goes to deskd-full)
// (bench/README.md, cold start). Every other command is the full program, deskd-full, which
// this executes in its own place: the same process, arguments and environment.

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runner/app/sandbox_command.h"

namespace {

// Where deskd-full is: installed, beside deskd's folder in ../libexec/deskd (/usr/sbin/deskd
// and /usr/libexec/deskd/deskd-full); in a build tree, next to deskd.
std::vector<std::string> full_program_candidates() {
  std::vector<std::string> candidates;
  char self[PATH_MAX];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length > 0) {
    const std::string path(self, static_cast<std::size_t>(length));
    const std::string folder = path.substr(0, path.rfind('/'));
    candidates.push_back(folder + "/../libexec/deskd/deskd-full");
    candidates.push_back(folder + "/deskd-full");
  }
  candidates.push_back(DESKD_FULL_PROGRAM);  // without /proc: where the package puts it
  return candidates;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "sandbox") == 0) {
    const std::vector<std::string_view> arguments(argv + 2, argv + argc);
    // --print-seccomp needs libseccomp, which this program does not load: deskd-full's.
    if (!deskd::app::sandbox_asks_for_seccomp_text(arguments)) {
      return deskd::app::run_sandbox_command(arguments, nullptr);
    }
  }
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::puts("deskd " DESKD_VERSION);
    return 0;
  }
  int first_error = 0;
  for (const std::string& candidate : full_program_candidates()) {
    ::execv(candidate.c_str(), argv);
    if (first_error == 0 || first_error == ENOENT) first_error = errno;
  }
  std::fprintf(stderr, "deskd: its main program deskd-full could not be started (%s); reinstall deskd.\n",
               std::strerror(first_error));
  return 2;
}
