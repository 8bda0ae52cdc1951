#pragma once
// What to change when a sandbox step fails inside a container: Podman's and Kubernetes'
// defaults refuse two steps of every launch (a fresh /proc, the desk's hostname), and the
// launch's own error names only the step. This names the option that allows it.

#include <string>
#include <string_view>

namespace deskd::sandbox {

/// " Under Podman, run with ..." (or the Kubernetes field) for a failed step when deskd runs
/// in a container and the step is one a container's defaults refuse; "" otherwise.
std::string container_fix_for(std::string_view failed_step);

}  // namespace deskd::sandbox
