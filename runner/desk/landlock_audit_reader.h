#pragma once
// The daemon's one reader of Landlock's audit records (sandbox/landlock_audit.h), for a root
// deskd on a kernel whose audit is on. Each sandbox's launcher tells its desk's recorder the
// host pid of the sandbox's first process, which makes the sandbox's Landlock domain; the
// recorder hands it here (watch). A domain's first refusal names its creator, which maps the
// domain to that desk's recorder from then on; a record of a domain no desk made (a program
// of the host's own, a desk's nested domain) is none of deskd's business and is dropped.
//
// Bounded whatever the desks do: at most kCreatorsKept creators and kDomainsKept domains are
// remembered (the ended ones are forgotten first), the parser keeps a few events, and each
// wake-up reads at most kMessagesPerWakeUp records before the loop serves others. A flood
// the kernel cannot hand over in time is dropped by the kernel (ENOBUFS): the desk's calls
// are refused all the same, only fewer are reported.

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "sandbox/landlock_audit.h"
#include "sandbox/refusal_report.h"

namespace deskd::desk {

class LandlockAuditReader : public std::enable_shared_from_this<LandlockAuditReader> {
 public:
  static constexpr std::size_t kCreatorsKept = 4096;
  static constexpr std::size_t kDomainsKept = 4096;
  static constexpr int kMessagesPerWakeUp = 256;
  /// How long drain() waits for the kernel to send on the records it has made: a command's
  /// refusals are made before it ends, but the kernel's audit thread sends them later, and
  /// on a busy host later than the command's end. A host that floods its audit log costs
  /// each command at most this.
  static constexpr std::chrono::milliseconds kSettleLimit{50};

  /// Joins the audit log and reads it on `executor`. The error says why refusals cannot be
  /// read here (not root, audit off, no Landlock ABI 7), for the daemon to say once.
  static Result<std::shared_ptr<LandlockAuditReader>> start(boost::asio::any_io_executor executor);
  ~LandlockAuditReader();

  /// A sandbox whose first process is `creator` (a host pid, alive) reports to `reporter`.
  void watch(pid_t creator, std::weak_ptr<sandbox::RefusalReporter> reporter);
  /// Reads and delivers what the kernel has made so far: waits (at most kSettleLimit) for
  /// the kernel's audit queue to be sent on, then reads what came; from any thread.
  void drain();
  /// Stops reading (the daemon is stopping).
  void stop();

  /// Records read, and records of domains no desk made (a test's view).
  std::uint64_t denials_read() const;
  std::uint64_t denials_unattributed() const;

 private:
  explicit LandlockAuditReader(boost::asio::any_io_executor executor, UniqueFd socket);
  struct Creator {
    std::uint64_t start_time = 0;
    std::weak_ptr<sandbox::RefusalReporter> reporter;
  };
  struct Delivery {
    std::shared_ptr<sandbox::RefusalReporter> reporter;
    sandbox::Refusal refusal;
  };
  void arm();
  // Under mutex_: reads at most `budget` messages; false when the socket broke.
  bool read_messages(int budget);
  // Under mutex_: whom each denial goes to, with its process.
  std::vector<Delivery> attribute(std::vector<sandbox::LandlockDenial> denials);
  std::shared_ptr<sandbox::RefusalReporter> reporter_of(const sandbox::LandlockDenial& denial);
  void forget_ended_creators();
  sandbox::RefusedProcess process_of(const sandbox::LandlockDenial& denial);

  boost::asio::posix::stream_descriptor descriptor_;
  mutable std::mutex mutex_;
  sandbox::LandlockAuditEvents events_;
  std::unordered_map<pid_t, Creator> creators_;
  std::unordered_map<std::uint64_t, std::weak_ptr<sandbox::RefusalReporter>> domains_;
  // The last callers' pids in their desks: a flood from one process reads /proc once.
  std::vector<std::pair<pid_t, sandbox::RefusedProcess>> recent_callers_;
  std::uint64_t read_ = 0;
  std::uint64_t unattributed_ = 0;
};

}  // namespace deskd::desk
