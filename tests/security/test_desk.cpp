// TestDesk: the temporary desk every security test attacks.
//
//   <root>/                 mkdtemp under $DESKD_SECURITY_TMPDIR (default /tmp), mode 755
//     desk/
//       README.md           readable control, not writable
//       Memory.md memory/ notes/ scratch/      the writable places
//       .env                hidden file:   API_KEY=<secret>
//       secrets/key.txt     hidden folder: <secret>
//       public/key.txt      readable control folder: "public"
//       public/open/shared.txt   world-writable folder and file: on the host any uid could
//                           write them, so in the sandbox only the read-only mount (or
//                           landlock) refuses — the test of those, not of file permissions
//       scratch/link-to-env      -> <desk>/.env        (absolute link)
//       scratch/link-to-secrets  -> ../secrets          (relative link)
//       scratch/link-to-readme   -> ../README.md        (a way out of the writable places)

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

namespace fs = std::filesystem;

void change_owner_recursively(const fs::path& path, uid_t uid) {
  const gid_t gid = uid;
  if (::lchown(path.c_str(), uid, gid) != 0) ADD_FAILURE() << "lchown " << path;
  if (!fs::is_directory(fs::symlink_status(path))) return;
  for (const auto& entry : fs::recursive_directory_iterator(path)) {
    if (::lchown(entry.path().c_str(), uid, gid) != 0) ADD_FAILURE() << "lchown " << entry.path();
  }
}

void make_folder(const fs::path& path) {
  std::error_code error;
  fs::create_directory(path, error);
  if (error) ADD_FAILURE() << "mkdir " << path << ": " << error.message();
  ::chmod(path.c_str(), 0755);
}

void make_link(const std::string& target, const fs::path& link) {
  std::error_code error;
  fs::create_symlink(target, link, error);
  if (error) ADD_FAILURE() << "symlink " << link << ": " << error.message();
}

}  // namespace

TestDesk::TestDesk(Daemon daemon) : daemon_(daemon), secret_(unique_name("deskd-secret")) {
  const char* base = std::getenv("DESKD_SECURITY_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/deskd-security-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern;
    return;
  }
  // Resolved: the sandbox masks and binds resolved paths, and the tests compare with them.
  root_ = fs::canonical(pattern);
  ::chmod(root_.c_str(), 0755);
  directory_ = root_ + "/desk";
  make_folder(directory_);

  write_host_file(path("README.md"), "This desk is for tests.\n");
  write_host_file(path("Memory.md"), "# Memory\n");
  for (const char* place : {"memory", "notes", "scratch", "public", "secrets"})
    make_folder(path(place));
  write_host_file(path(".env"), "API_KEY=" + secret_ + "\n");
  write_host_file(path("secrets/key.txt"), secret_ + "\n");
  write_host_file(path("public/key.txt"), "public\n");
  make_folder(path("public/open"));
  ::chmod(path("public/open").c_str(), 0777);
  write_host_file(path("public/open/shared.txt"), "shared\n", 0666);
  make_link(path(".env"), path("scratch/link-to-env"));
  make_link("../secrets", path("scratch/link-to-secrets"));
  make_link("../README.md", path("scratch/link-to-readme"));

  if (daemon_ == Daemon::unprivileged) {
    change_owner_recursively(root_, kUnprivilegedUid);
  } else {
    for (const char* place : {"Memory.md", "memory", "notes", "scratch"})
      change_owner_recursively(path(place), kRootSandboxUid);
  }
}

TestDesk::~TestDesk() {
  if (root_.empty()) return;
  std::error_code error;
  // remove_all does not follow links, so whatever a sandbox planted cannot widen it.
  fs::remove_all(root_, error);
  if (error) ADD_FAILURE() << "could not remove " << root_ << ": " << error.message();
}

std::string TestDesk::path(std::string_view relative) const {
  return directory_ + "/" + std::string(relative);
}

std::vector<std::string> TestDesk::sandbox_arguments() const {
  return {"--desk", directory_, "--hide", path(".env"), "--hide", path("secrets"), "--read-only", probe_folder()};
}

void TestDesk::hand_over(const std::string& path) const {
  change_owner_recursively(path, sandbox_host_uid(daemon_));
}

}  // namespace deskd::security_testing
