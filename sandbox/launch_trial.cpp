#include "sandbox/launch_trial.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "base/unique_fd.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/file_opener.h"
#include "sandbox/launcher.h"

namespace deskd::sandbox {
namespace {

Result<void> launch_in(const std::filesystem::path& desk, bool allow_supplementary_groups) {
  DESKD_ASSIGN_OR_RETURN(auto confinement, policy::Confinement::create(desk, {}));
  SandboxSettings settings;
  settings.allow_supplementary_groups = allow_supplementary_groups;
  DESKD_ASSIGN_OR_RETURN(auto spec, build_sandbox_spec(confinement, settings));
  DESKD_RETURN_IF_ERROR(prepare_desk_for_sandbox(spec));
  UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd) return Error::from_errno(errno, "Opening /dev/null failed");
  DESKD_ASSIGN_OR_RETURN(auto process, launch_sandboxed(spec, {"true"}, {null_fd.get(), null_fd.get(), null_fd.get()}));
  DESKD_ASSIGN_OR_RETURN(auto status, process.wait_for(std::chrono::seconds(20)));
  if (!status) return Error::make(ErrorCode::system, "`true` did not finish within 20 s in the sandbox.");
  if (*status != 0) return Error::make(ErrorCode::system, "`true` exited with status " + std::to_string(*status) + ".");
  FileOpener opener(spec);
  struct stat folder {};
  if (opener.stat(AT_FDCWD, desk.c_str(), &folder, 0) != 0) {
    return Error::from_errno(errno, "The desk's file opener could not look at its folder");
  }
  return success();
}

}  // namespace

SupportCheck try_sandbox_launch(bool allow_supplementary_groups) {
  SupportCheck check;
  check.name = "a real launch";
  check.required = true;
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base == '/' ? base : "/tmp") + "/deskd-doctor-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    check.detail = "cannot make a folder to try in: " + pattern;
    check.fix = "set TMPDIR to a writable folder";
    return check;
  }
  const std::filesystem::path desk = std::filesystem::path(pattern) / "desk";
  std::error_code error;
  std::filesystem::create_directory(desk, error);
  ::chmod(pattern.c_str(), 0755);
  auto tried = error ? Result<void>(Error::make(ErrorCode::system, "cannot create " + desk.native())) : launch_in(desk, allow_supplementary_groups);
  std::filesystem::remove_all(pattern, error);
  if (tried.ok()) {
    check.available = true;
    check.detail = "true ran in a full sandbox, and the file opener saw the desk folder";
  } else {
    check.detail = tried.error().what;
    check.fix = "the step named above is refused here; run deskd where it is allowed (see the README's sandbox section)";
  }
  return check;
}

}  // namespace deskd::sandbox
