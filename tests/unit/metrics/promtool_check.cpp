#include "unit/metrics/promtool_check.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace deskd::metrics {

PromtoolVerdict promtool_check_metrics(const std::string& text) {
  PromtoolVerdict verdict;
  if (::access("/usr/bin/promtool", X_OK) != 0) return verdict;
  char folder_template[] = "/tmp/deskd-promtool-XXXXXX";
  if (::mkdtemp(folder_template) == nullptr) return verdict;
  const std::filesystem::path folder(folder_template);
  {
    std::ofstream input(folder / "metrics.txt", std::ios::binary);
    input << text;
  }
  const std::string command = "/usr/bin/promtool check metrics < '" + (folder / "metrics.txt").string() + "' > '" +
                              (folder / "output.txt").string() + "' 2>&1";
  const int status = std::system(command.c_str());
  verdict.ran = true;
  verdict.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream output(folder / "output.txt", std::ios::binary);
  verdict.output.assign(std::istreambuf_iterator<char>(output), {});
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  return verdict;
}

}  // namespace deskd::metrics
