#include "sandbox/kernel_masks.h"

#include <string>

namespace deskd::sandbox {
void plan_kernel_masks(std::vector<MountStep>& steps) {
  for (const std::string_view path : kMaskedKernelPaths) {
    MountStep mask{.operation = MountStep::Operation::mask};
    mask.target = in_new_root(path);
    mask.description = "mask " + std::string(path) + " as container runtimes do";
    steps.push_back(std::move(mask));
  }
  for (const std::string_view path : kReadOnlyKernelPaths) {
    MountStep read_only{.operation = MountStep::Operation::make_read_only_if_present};
    read_only.target = in_new_root(path);
    read_only.description = "make " + std::string(path) + " read-only as container runtimes do";
    steps.push_back(std::move(read_only));
  }
}

}  // namespace deskd::sandbox
