#include "runner/app/config_confinement.h"

#include <string>

#include "policy/path_resolution.h"

namespace deskd::app {
namespace {

using std::filesystem::path;

Error refused(std::string sentence) { return Error::make(ErrorCode::refused, std::move(sentence)); }

}  // namespace

Result<void> check_read_only_path(const path& read_only_path) {
  const std::string shown = read_only_path.native();
  if (read_only_path == read_only_path.root_path()) {
    return refused("the read-only path / would show the whole host; write host_view = \"full\" for that");
  }
  if (read_only_path == "/tmp") {
    return refused("the read-only path /tmp would cover the sandbox's own /tmp; name a folder inside it instead");
  }
  for (const char* replaced : {"/proc", "/sys", "/dev", "/run", "/var/run"}) {
    if (!policy::is_same_or_inside(read_only_path, replaced)) continue;
    return refused("the read-only path " + shown + " lies in " + replaced +
                   ", which the sandbox makes up itself so that no host device or Unix socket is reachable; name a "
                   "folder elsewhere");
  }
  return success();
}

}  // namespace deskd::app
