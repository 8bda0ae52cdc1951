#include "sandbox/container_fix.h"

#include <unistd.h>

#include <cstdlib>

namespace deskd::sandbox {

namespace {

enum class Container { none, podman, kubernetes };

Container this_container() {
  // The kubelet gives every container these variables; Podman writes /run/.containerenv.
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) return Container::kubernetes;
  if (::access("/run/.containerenv", F_OK) == 0) return Container::podman;
  const char* container = std::getenv("container");
  if (container != nullptr && std::string_view(container) == "podman") return Container::podman;
  return Container::none;
}

}  // namespace

std::string container_fix_for(std::string_view failed_step) {
  const Container container = this_container();
  if (container == Container::none) return "";
  const bool podman = container == Container::podman;
  if (failed_step.find("mount a new /proc") != std::string_view::npos) {
    return podman ? " Under Podman the container's /proc has masked paths: run it with --security-opt unmask=/proc/*."
                  : " In Kubernetes the container's /proc has masked paths: set procMount: Unmasked (with "
                    "hostUsers: false) in its securityContext.";
  }
  if (failed_step.find("set the hostname") != std::string_view::npos) {
    return podman ? " Podman's default seccomp profile refuses sethostname: run the container with --security-opt "
                    "seccomp=/usr/share/deskd/seccomp.json (the image's profile, which allows it)."
                  : " The runtime's default seccomp profile refuses sethostname: set seccompProfile to type "
                    "Localhost, localhostProfile deskd/seccomp.json (the image's profile).";
  }
  return "";
}

}  // namespace deskd::sandbox
