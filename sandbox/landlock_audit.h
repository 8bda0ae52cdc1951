#pragma once
// Landlock's refusals, as the kernel's audit tells them (Landlock ABI 7, Linux 6.15). Landlock
// answers a refused write with a bare EACCES and tells nobody else; with audit on, it also
// writes a LANDLOCK_ACCESS record (the domain, the rights missing, the path), the domain's
// LANDLOCK_DOMAIN record the first time that domain shows (with the pid that created it) and,
// for a process the audit follows, a SYSCALL record (the caller's pid, comm and exe). A root
// deskd reads them from the audit log's multicast group (CAP_AUDIT_READ): this file holds the
// socket, the parsing of records into refusals, and the flags a sandbox's domain needs so
// that its programs' refusals are logged after their exec too. The desk each domain belongs
// to is the reader's business (runner/desk/landlock_audit_reader.h): a domain's creator is
// the sandbox's first process, whose host pid the launcher knows.

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/refusal_report.h"

namespace deskd::sandbox {

/// landlock_restrict_self's flags (ABI 7; Debian 12's headers predate them).
inline constexpr std::uint32_t kLandlockLogNewExecOn = 1U << 1;
inline constexpr std::uint32_t kLandlockLogSubdomainsOff = 1U << 2;
/// The flags a desk's domain is made with from ABI 7 on: its refusals are logged after the
/// sandbox's exec of deskd-init (the kernel logs only until the first exec by default), and
/// domains the desk makes for itself log nothing (their refusals are the desk's own).
constexpr std::uint32_t landlock_restrict_flags(int abi) {
  return abi >= 7 ? kLandlockLogNewExecOn | kLandlockLogSubdomainsOff : 0;
}

/// The audit record types deskd reads (linux/audit.h).
inline constexpr int kAuditSyscallRecord = 1300;
inline constexpr int kAuditEndOfEvent = 1320;
inline constexpr int kAuditLandlockAccess = 1423;
inline constexpr int kAuditLandlockDomain = 1424;

/// One record: its type, the event's serial ("audit(1729738800.268:30): ...") and the rest.
struct AuditRecord {
  int type = 0;
  std::uint64_t serial = 0;
  std::string body;  ///< "domain=1a6fdc66f blockers=fs.write_file path=\"/dev/tty\" ..."
};

/// `payload` of a netlink message of `type` as a record; nullopt when it is not one.
std::optional<AuditRecord> parse_audit_record(int type, std::string_view payload);

/// The value of field `name` in a record's body: a quoted string unquoted, a hex-encoded one
/// (audit writes strings with spaces, quotes or control bytes as hex) decoded, a number as
/// it is. nullopt when absent.
std::optional<std::string> audit_field(std::string_view body, std::string_view name);

/// One Landlock refusal the audit told: the domain that refused, the domain's creator when
/// this event named it (the first refusal of each domain does), the caller's host pid when
/// a SYSCALL record came with it (0 otherwise), and the refusal without its process.
struct LandlockDenial {
  std::uint64_t domain = 0;
  pid_t creator = 0;
  pid_t caller = 0;
  std::string caller_comm;
  std::string caller_exe;
  Refusal refusal;
};

/// A domain that ended (LANDLOCK_DOMAIN status=deallocated): its id is never used again.
struct LandlockDomainEnd {
  std::uint64_t domain = 0;
};

/// Gathers records into events by serial. An event is over at its end-of-event record, when
/// a later serial has come after it for kEventsKept others, or when take(all) is asked. It
/// keeps at most kEventsKept events, whatever arrives.
class LandlockAuditEvents {
 public:
  static constexpr std::size_t kEventsKept = 32;
  static constexpr std::size_t kRecordsPerEvent = 8;

  void add(AuditRecord record);
  /// The denials of the events that are over (with `all`, of every event held), in order.
  std::vector<LandlockDenial> take_denials(bool all);
  /// The domains that ended since the last call.
  std::vector<LandlockDomainEnd> take_ends();

 private:
  struct Event {
    std::uint64_t serial = 0;
    std::vector<AuditRecord> records;
    bool over = false;
  };
  static void describe(const Event& event, std::vector<LandlockDenial>& out);
  std::deque<Event> events_;
  std::vector<LandlockDomainEnd> ends_;
};

/// The refusal a LANDLOCK_ACCESS record's blockers and path stand for:
/// "write /dev/urandom", "create /etc/x", with the rule it broke.
Refusal describe_landlock_blockers(std::string_view blockers, std::string_view path);

/// A netlink audit socket joined to the audit log's multicast group, non-blocking. Needs
/// CAP_AUDIT_READ in the host's user namespace (a root deskd); the error says what is missing.
Result<UniqueFd> open_audit_log_socket();

/// The kernel's audit as AUDIT_GET tells it (needs CAP_AUDIT_CONTROL: a root deskd).
struct KernelAuditStatus {
  bool enabled = false;       ///< records are made only while it is on
  std::uint32_t backlog = 0;  ///< records made and not yet sent on (to the log group, auditd)
};
Result<KernelAuditStatus> kernel_audit_status();

/// Whether the kernel's audit is on.
Result<bool> kernel_audit_enabled();

}  // namespace deskd::sandbox
