#include "sandbox/trust_bundle.h"

#include <sys/mount.h>

#include <algorithm>
#include <iterator>

namespace deskd::sandbox {
namespace {

// curl and Python's ssl read SSL_CERT_FILE through OpenSSL; requests (and pip) read
// REQUESTS_CA_BUNDLE, curl's own builds CURL_CA_BUNDLE; Node keeps its compiled-in roots
// and adds NODE_EXTRA_CA_CERTS (the system's certificates again do no harm there).
constexpr const char* kTrustBundleVariables[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                                                 "NODE_EXTRA_CA_CERTS"};

}  // namespace

std::vector<std::string> trust_bundle_environment() {
  std::vector<std::string> environment;
  for (const char* name : kTrustBundleVariables) environment.push_back(std::string(name) + "=" + kTrustBundleInView);
  return environment;
}

bool is_trust_bundle_variable(const std::string& entry) {
  const std::string name = entry.substr(0, entry.find('='));
  return std::any_of(std::begin(kTrustBundleVariables), std::end(kTrustBundleVariables),
                     [&](const char* variable) { return name == variable; });
}

void use_trust_bundle(SandboxSpec& spec, std::filesystem::path file) {
  spec.trust_bundle = std::move(file);
  std::erase_if(spec.environment, is_trust_bundle_variable);
  for (auto& entry : trust_bundle_environment()) spec.environment.push_back(std::move(entry));
}

void plan_trust_bundle(const SandboxSpec& spec, std::vector<MountStep>& steps) {
  if (!spec.trust_bundle) return;
  // From /oldroot, the host as it is: the state folder holding the file is masked in the
  // new root, never here. A root deskd opens it itself (open_trees_for_binds), as the desk's
  // uid cannot search a 0700 state folder; an unprivileged deskd's child is deskd's own uid.
  MountStep bind{.operation = MountStep::Operation::bind};
  bind.source = std::string(kOldRoot) + spec.trust_bundle->native();
  bind.target = in_new_root(kTrustBundleInView);
  bind.opened_by_daemon = true;
  // The target must be a file of the view (both views show the host's /etc, read-only, so
  // nothing can be made there): a host without one, or where it is an absolute link (which
  // the child, rooted in its base tmpfs, cannot follow), fails the launch here.
  bind.description =
      "bind the desk's trust bundle over /etc/ssl/certs/ca-certificates.crt (a host without that file needs the "
      "ca-certificates package)";
  steps.push_back(std::move(bind));

  MountStep read_only{.operation = MountStep::Operation::set_attributes};
  read_only.target = in_new_root(kTrustBundleInView);
  read_only.attributes_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  read_only.description = "make the desk's trust bundle read-only";
  steps.push_back(std::move(read_only));
}

}  // namespace deskd::sandbox
