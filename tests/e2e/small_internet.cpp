#include "e2e/small_internet.h"

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace deskd::e2e {
namespace {

const std::string kScripts = DESKD_SMALL_INTERNET_DIR;

// Once per process: our own network namespace (nothing of the host's network is in reach of
// anything started from here) and mount namespace (for resolv.conf).
std::string enter_own_namespaces() {
  static std::string failure = []() -> std::string {
    if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) return std::string("unshare: ") + std::strerror(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return std::string("making mounts private: ") + std::strerror(errno);
    }
    // A file of this process's; the mount is undone and the file removed at exit.
    static const std::string resolv = "/var/tmp/deskd-egress-" + std::to_string(::getpid()) + ".resolv.conf";
    std::ofstream(resolv) << "nameserver 10.201.0.53\noptions timeout:2 attempts:2\n";
    std::atexit([] {
      ::umount2("/etc/resolv.conf", MNT_DETACH);
      ::unlink(resolv.c_str());
    });
    if (::mount(resolv.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0) {
      return std::string("mounting the test's resolv.conf: ") + std::strerror(errno);
    }
    return "";
  }();
  return failure;
}

}  // namespace

SmallInternet::SmallInternet() {
  if (::geteuid() != 0) {
    why_ = "the small internet needs root (network namespaces, veth)";
    needs_root_ = true;
    return;
  }
  name_ = "dke" + std::to_string(::getpid() % 1000000);
  folder_ = "/var/tmp/deskd-egress-" + std::to_string(::getpid());
  std::filesystem::create_directories(folder_);
  why_ = enter_own_namespaces();
  if (!why_.empty()) return;
  const std::string command = kScripts + "/up.sh " + name_ + " " + folder_ + " >" + folder_ + "/up.log 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream log(folder_ + "/up.log");
    std::stringstream text;
    text << log.rdbuf();
    why_ = "up.sh failed: " + text.str();
  }
}

SmallInternet::~SmallInternet() {
  if (name_.empty()) return;
  const std::string command = kScripts + "/down.sh " + name_ + " " + folder_;
  if (std::system(command.c_str()) != 0) std::fprintf(stderr, "down.sh %s failed\n", name_.c_str());
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

std::string SmallInternet::canary_log() const {
  std::ifstream log(folder_ + "/canary.log");
  std::stringstream text;
  text << log.rdbuf();
  return text.str();
}

}  // namespace deskd::e2e
