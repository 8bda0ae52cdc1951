#pragma once
// How much of the host's filesystem a sandbox shows (always read-only): the config's
// `host_view` key. Its own header so that the config can name it without the sandbox's spec.

namespace deskd::sandbox {

enum class HostView {
  /// The system folders a shell needs (/usr, /bin, /sbin, /lib*, /etc, /opt), the desk's
  /// folder and what the config names; not /home, /root, /var, /srv or other desks.
  minimal,
  /// The host's whole tree, read-only; hidden paths and other desks are still masked.
  full,
};

}  // namespace deskd::sandbox
