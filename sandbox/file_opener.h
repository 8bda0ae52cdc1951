#pragma once
// FileOpener: a desk's file system calls, made inside a sandbox of the desk's own. The file
// tools hand it to SafeFile, so whatever the desk's bash cannot open — file modes as the
// desk's uid, masks, the read-only and minimal host view, landlock — they cannot open
// either: the two enforcers share one kernel view and cannot drift. PathPolicy's checks and
// messages stay on top.
//
// The helper is deskd-init in "files" mode (sandbox/init/init_protocol.h), started on first
// use in a sandbox built from the desk's SandboxSpec, in a pid namespace apart from the
// bash's (a desk's processes cannot see or signal it). Each call is one request on a
// SOCK_SEQPACKET socket; opened descriptors come back with SCM_RIGHTS.

#include <chrono>
#include <mutex>
#include <optional>

#include "base/unique_fd.h"
#include "policy/file_system_calls.h"
#include "sandbox/sandbox_spec.h"
#include "sandbox/sandboxed_process.h"

struct deskd_file_request;
struct deskd_file_reply;

namespace deskd::sandbox {

class FileOpener final : public policy::FileSystemCalls {
 public:
  explicit FileOpener(SandboxSpec spec, std::chrono::milliseconds patience = std::chrono::seconds(10));
  ~FileOpener() override;
  FileOpener(const FileOpener&) = delete;
  FileOpener& operator=(const FileOpener&) = delete;

  int open(int directory, const char* path, int flags, mode_t mode, std::uint64_t resolve) const override;
  int make_directory(int directory, const char* path, mode_t mode) const override;
  int rename(int directory, const char* from, const char* to) const override;
  int unlink(int directory, const char* path, int flags) const override;
  int stat(int directory, const char* path, struct stat* status, int flags) const override;
  long read_link(int directory, const char* path, char* buffer, std::size_t size) const override;

  /// Stops the helper; the next call starts a new one.
  void close();

  /// Stops the helper when no call has ended within `idle` (the desk's idle terminal is
  /// closed with it). Returns when a helper still running was last used (now while a call
  /// is under way), or nullopt when none runs.
  std::optional<std::chrono::steady_clock::time_point> close_if_unused_for(std::chrono::milliseconds idle);

 private:
  // One round trip; returns the reply's result (an opened descriptor for open), or -1 with
  // errno. A helper that cannot be started, or is gone or stuck, gives EIO.
  // `reply` receives the whole answer (a stat's status, a link's target) when not null.
  int call(deskd_file_request& request, int directory, deskd_file_reply* answer = nullptr) const;
  bool ensure_started() const;
  void stop() const;

  SandboxSpec spec_;
  std::chrono::milliseconds patience_;
  mutable std::mutex mutex_;
  mutable UniqueFd socket_;
  mutable std::optional<SandboxedProcess> helper_;
  mutable std::chrono::steady_clock::time_point last_used_{};  // the end of the last call
};

}  // namespace deskd::sandbox
