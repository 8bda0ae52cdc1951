#pragma once
// How much of the host a sandbox sees besides the desk's own folder.

namespace deskd::sandbox {

enum class HostView {
  /// The system folders a shell and its tools need (/usr, /bin, /sbin, /lib*, /etc, /opt),
  /// read-only, plus what the desk's settings name: not /home, /root, /var, /srv, /mnt or
  /// other desks.
  minimal,
  /// The whole host, read-only, with /run and the runtime folders covered: the view of
  /// deskd before the minimal view, for desks that need it.
  full,
};

}  // namespace deskd::sandbox
