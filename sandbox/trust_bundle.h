#pragma once
// The desk's trust in the sandbox: when deskd's API gate ends a desk's TLS connections with
// certificates of the desk's own CA (runner/egress/desk_authority.h), the desk must trust
// that CA with no options. deskd writes a bundle (the system's certificates and the CA's) in
// its state folder; every sandbox of the desk shows it read-only over the system bundle of
// the view, and the variables curl, Python (urllib, requests, httpx) and Node read name it.

#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/mount_plan.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// Where the desk sees its trust bundle: Debian's system bundle, which OpenSSL (and so curl,
/// Python's ssl) reads by default.
inline constexpr const char* kTrustBundleInView = "/etc/ssl/certs/ca-certificates.crt";

/// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and NODE_EXTRA_CA_CERTS, each naming
/// kTrustBundleInView.
std::vector<std::string> trust_bundle_environment();

/// Whether NAME=value sets one of the variables above.
bool is_trust_bundle_variable(const std::string& entry);

/// Gives an already built spec the desk's trust bundle `file` (a host file deskd wrote):
/// sets `trust_bundle` and replaces the four variables in its environment, whatever the
/// environment allowlist had copied. A file missing at launch fails the launch.
void use_trust_bundle(SandboxSpec& spec, std::filesystem::path file);

/// Appends the steps that bind `spec.trust_bundle` (when set) read-only, nosuid, nodev and
/// noexec over kTrustBundleInView in the new root: from the host side (opened by a root
/// deskd itself, since it lies in deskd's state folder, a hidden path of the desk). They must
/// follow the view of /etc and the hidden paths' masks, so that nothing covers them.
void plan_trust_bundle(const SandboxSpec& spec, std::vector<MountStep>& steps);

}  // namespace deskd::sandbox
