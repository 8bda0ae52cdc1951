#pragma once
// What every sandbox's /proc and /sys hide of the kernel and of the other desks, as a
// container runtime hides it: the paths runc (Docker's and Kubernetes' defaults) and Podman
// mask or make read-only, plus the kernel's command line, its build configuration, the crash
// dump notes and the pressure stall figures (which tell one desk what the others are doing).
// Planned for the bash sandbox and the file opener alike: both run the same mount plan.
//
// Not masked: /proc/loadavg. The same three load figures come from sysinfo(2), which glibc's
// getloadavg(), uptime and top call, and which the seccomp profile cannot refuse without
// breaking free, uptime and every runtime that sizes itself by it; an empty or fixed
// /proc/loadavg would hide nothing from a desk that asks the kernel directly.

#include <string_view>
#include <vector>

#include "sandbox/mount_plan.h"

namespace deskd::sandbox {

/// Masked: a file reads as empty (bound over by the empty file), a folder lists nothing and
/// refuses to be read (an empty mode-000 tmpfs). A path this kernel lacks is skipped.
inline constexpr std::string_view kMaskedKernelPaths[] = {
    // runc's and Podman's defaults.
    "/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
    "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap", "/sys/dev/block",
    "/sys/fs/selinux",
    // deskd's own: the boot command line and kernel configuration (what to attack), the
    // crash dump notes (kernel addresses), and the pressure stall figures of the whole host.
    "/proc/cmdline", "/proc/config.gz", "/sys/kernel/vmcoreinfo", "/proc/pressure",
};

/// Read-only (bound onto themselves), as runc and Podman have them; skipped where missing.
inline constexpr std::string_view kReadOnlyKernelPaths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

/// Appends the steps that carry out the masks above inside the new root; they must follow
/// the mounts of /proc and /sys and precede the pivot into the new root.
void plan_kernel_masks(std::vector<MountStep>& steps);

}  // namespace deskd::sandbox
