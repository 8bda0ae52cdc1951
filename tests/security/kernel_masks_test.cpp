// The kernel's and the host's figures a container runtime hides, hidden in every sandbox
// (issue 26): what runc and Podman mask (a file reads as empty, a folder lists nothing) and
// make read-only, plus the boot command line, the kernel's configuration, its crash dump notes
// and the pressure stall figures — in the minimal and the full view, with the sandbox's own
// /sys and with the host's (network "host").

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

#include "security/sandbox_runner.h"

namespace deskd::security_testing {
namespace {

using ::testing::HasSubstr;

const char* const kMaskedPaths[] = {
    "/proc/acpi",      "/proc/asound",         "/proc/interrupts",
    "/proc/kcore",     "/proc/keys",           "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats",   "/proc/sched_debug",
    "/proc/scsi",      "/sys/firmware",        "/sys/devices/virtual/powercap",
    "/sys/dev/block",  "/sys/fs/selinux",      "/proc/cmdline",
    "/proc/config.gz", "/sys/kernel/vmcoreinfo", "/proc/pressure",
};

const char* const kReadOnlyPaths[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                      "/proc/sysrq-trigger"};

// One line per path: "PATH absent", "PATH empty" (a file with nothing to read, a folder with
// nothing to list, or refused), or "PATH shows" — and for the read-only ones, "PATH <first
// mount option>" of the mount at that path.
std::string inspection_script() {
  std::string script =
      "masked() { if [ ! -e \"$1\" ]; then echo \"$1 absent\";"
      " elif [ -d \"$1\" ]; then [ -n \"$(ls -A \"$1\" 2>/dev/null)\" ] && echo \"$1 shows\" || echo \"$1 empty\";"
      " else [ -n \"$(head -c 16 \"$1\" 2>/dev/null | od -An -c)\" ] && echo \"$1 shows\" || echo \"$1 empty\"; fi; }\n"
      "read_only() { if [ ! -e \"$1\" ]; then echo \"$1 absent\"; return; fi;"
      " options=$(awk -v p=\"$1\" '$5 == p { o = $6 } END { print o }' /proc/self/mountinfo);"
      " echo \"$1 ${options%%,*}\"; }\n";
  for (const char* path : kMaskedPaths) script += std::string("masked ") + path + "\n";
  for (const char* path : kReadOnlyPaths) script += std::string("read_only ") + path + "\n";
  // The control: /proc itself still works.
  script += "masked /proc/version\n";
  return script;
}

class KernelMasksTest : public SandboxTest {};

TEST_P(KernelMasksTest, RuntimeMasksHoldInEveryView) {
  const std::vector<std::vector<std::string>> views = {
      {}, {"--host-view", "full"}, {"--host-view", "full", "--net", "host"}};
  for (const auto& view : views) {
    std::string label;
    for (const auto& each : view) label += each + " ";
    const SandboxRun run = sandbox({"/bin/bash", "-c", inspection_script()}, view);
    ASSERT_EQ(run.exit_status, 0) << label << "\n" << run.describe();
    for (const char* path : kMaskedPaths) {
      const std::string line_empty = std::string(path) + " empty\n";
      const std::string line_absent = std::string(path) + " absent\n";
      const bool hidden = run.out.find(line_empty) != std::string::npos ||
                          run.out.find(line_absent) != std::string::npos;
      EXPECT_TRUE(hidden) << path << " shows in the sandbox (" << label << ")\n" << run.describe();
    }
    // The sandbox's /proc has what the host's has: what exists there must read as masked,
    // not merely be absent (the host shows /proc/cmdline, /proc/interrupts and
    // /proc/pressure/* to anyone).
    for (const char* path : kMaskedPaths) {
      if (std::string_view(path).rfind("/proc/", 0) != 0 || ::access(path, F_OK) != 0) continue;
      EXPECT_THAT(run.out, HasSubstr(std::string(path) + " empty\n")) << label << "\n" << run.describe();
    }
    EXPECT_THAT(run.out, HasSubstr("/proc/cmdline empty\n")) << label << "\n" << run.describe();
    for (const char* path : kReadOnlyPaths) {
      const bool read_only = run.out.find(std::string(path) + " ro\n") != std::string::npos ||
                             run.out.find(std::string(path) + " absent\n") != std::string::npos;
      EXPECT_TRUE(read_only) << path << " is not a read-only mount in the sandbox (" << label << ")\n"
                             << run.describe();
    }
    EXPECT_THAT(run.out, HasSubstr("/proc/sys ro\n")) << label << "\n" << run.describe();
    EXPECT_THAT(run.out, HasSubstr("/proc/version shows\n")) << label << "\n" << run.describe();
  }
}

DESKD_FOR_BOTH_DAEMONS(KernelMasksTest);

}  // namespace
}  // namespace deskd::security_testing
