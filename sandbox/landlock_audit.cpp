#include "sandbox/landlock_audit.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

namespace deskd::sandbox {

namespace {

// linux/audit.h: asking the audit's status, and the log's multicast group.
constexpr int kAuditGet = 1000;
constexpr unsigned kAuditLogGroup = 1;  // AUDIT_NLGRP_READLOG
// A path or name from the desk is cut here: it is the desk's text, and a record is bounded.
constexpr std::size_t kLongestName = 256;
// Enough for a burst of refusals between two reads; beyond it the kernel drops records
// (ENOBUFS), which costs reports, never the desk's calls.
constexpr int kReceiveBufferBytes = 1 << 20;

bool is_hex_text(std::string_view text) {
  return !text.empty() && text.size() % 2 == 0 && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::string decode_hex(std::string_view text) {
  std::string decoded;
  decoded.reserve(text.size() / 2);
  for (std::size_t index = 0; index + 1 < text.size(); index += 2) {
    unsigned value = 0;
    std::from_chars(text.data() + index, text.data() + index + 2, value, 16);
    decoded.push_back(static_cast<char>(value));
  }
  return decoded;
}

// The raw value of `name=` in `body`, as written (quotes kept).
std::optional<std::string_view> raw_field(std::string_view body, std::string_view name) {
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = std::min(body.find(' ', at), body.size());
    const std::string_view token = body.substr(at, end - at);
    if (token.size() > name.size() && token.starts_with(name) && token[name.size()] == '=') {
      return token.substr(name.size() + 1);
    }
    at = end + 1;
  }
  return std::nullopt;
}

template <typename Number>
Number number_field(std::string_view body, std::string_view name, int base) {
  Number value{};
  if (const auto raw = raw_field(body, name)) std::from_chars(raw->data(), raw->data() + raw->size(), value, base);
  return value;
}

std::string bounded(std::string text) {
  if (text.size() > kLongestName) text.resize(kLongestName);
  return text;
}

struct BlockerWords {
  std::string_view blocker;
  std::string_view verb;
  std::string_view rule;
};

constexpr std::string_view kWriteRule = "desks may write only in their writable places, /tmp and /dev/shm";

// Landlock's blocker names (security/landlock/audit.c) and what a person calls them.
constexpr BlockerWords kBlockerWords[] = {
    {"fs.write_file", "write", kWriteRule},
    {"fs.truncate", "truncate", kWriteRule},
    {"fs.make_reg", "create", kWriteRule},
    {"fs.make_dir", "create", kWriteRule},
    {"fs.make_sym", "create", kWriteRule},
    {"fs.make_fifo", "create", kWriteRule},
    {"fs.make_sock", "create", kWriteRule},
    {"fs.make_char", "create", kWriteRule},
    {"fs.make_block", "create", kWriteRule},
    {"fs.remove_file", "remove", kWriteRule},
    {"fs.remove_dir", "remove", kWriteRule},
    {"fs.refer", "move or link", kWriteRule},
    {"fs.ioctl_dev", "ioctl", "desks may not send device ioctls there"},
    {"fs.change_topology", "change mounts at", "desks may not change their mounts"},
    {"scope.signal", "signal", "desks may signal only their own processes"},
    {"scope.abstract_unix_socket", "connect to an abstract socket", "desks may not reach the host's abstract sockets"},
    {"ptrace", "ptrace", "desks may not reach other processes"},
};

}  // namespace

std::optional<AuditRecord> parse_audit_record(int type, std::string_view payload) {
  while (!payload.empty() && (payload.back() == '\0' || payload.back() == '\n')) payload.remove_suffix(1);
  if (!payload.starts_with("audit(")) return std::nullopt;
  const std::size_t colon = payload.find(':');
  const std::size_t close = payload.find("): ");
  if (colon == std::string_view::npos || close == std::string_view::npos || colon > close) return std::nullopt;
  AuditRecord record;
  record.type = type;
  const auto parsed = std::from_chars(payload.data() + colon + 1, payload.data() + close, record.serial);
  if (parsed.ec != std::errc{} || parsed.ptr != payload.data() + close) return std::nullopt;
  record.body = std::string(payload.substr(close + 3));
  return record;
}

std::optional<std::string> audit_field(std::string_view body, std::string_view name) {
  const auto raw = raw_field(body, name);
  if (!raw) return std::nullopt;
  if (raw->size() >= 2 && raw->front() == '"' && raw->back() == '"')
    return std::string(raw->substr(1, raw->size() - 2));
  if (is_hex_text(*raw) && (name == "path" || name == "comm" || name == "exe" || name == "ocomm")) {
    return decode_hex(*raw);
  }
  return std::string(*raw);
}

Refusal describe_landlock_blockers(std::string_view blockers, std::string_view path) {
  Refusal refusal;
  refusal.enforcer = Enforcer::landlock;
  const std::string_view first = blockers.substr(0, blockers.find(','));
  const auto* words = std::find_if(std::begin(kBlockerWords), std::end(kBlockerWords),
                                   [&](const BlockerWords& known) { return known.blocker == first; });
  const std::string_view verb = words != std::end(kBlockerWords) ? words->verb : std::string_view("access");
  refusal.rule = words != std::end(kBlockerWords) ? std::string(words->rule) : std::string(kWriteRule);
  refusal.what = path.empty() ? std::string(verb) : std::string(verb) + ' ' + bounded(std::string(path));
  refusal.details = "blockers " + bounded(std::string(blockers));
  return refusal;
}

void LandlockAuditEvents::add(AuditRecord record) {
  auto found =
      std::find_if(events_.begin(), events_.end(), [&](const Event& event) { return event.serial == record.serial; });
  if (found == events_.end()) {
    // Only events with a Landlock record matter; a lone SYSCALL or EOE of another event
    // (every audited failure has them) is not kept.
    if (record.type != kAuditLandlockAccess && record.type != kAuditLandlockDomain) return;
    events_.push_back(Event{record.serial, {}, false});
    found = std::prev(events_.end());
  }
  if (record.type == kAuditEndOfEvent) {
    found->over = true;
    return;
  }
  if (found->records.size() < kRecordsPerEvent) found->records.push_back(std::move(record));
}

void LandlockAuditEvents::describe(const Event& event, std::vector<LandlockDenial>& out) {
  pid_t creator = 0;
  pid_t caller = 0;
  std::string comm;
  std::string exe;
  for (const AuditRecord& record : event.records) {
    if (record.type == kAuditLandlockDomain && audit_field(record.body, "status") == "allocated") {
      creator = number_field<pid_t>(record.body, "pid", 10);
    } else if (record.type == kAuditSyscallRecord) {
      caller = number_field<pid_t>(record.body, "pid", 10);
      comm = bounded(audit_field(record.body, "comm").value_or(""));
      exe = bounded(audit_field(record.body, "exe").value_or(""));
    }
  }
  for (const AuditRecord& record : event.records) {
    if (record.type != kAuditLandlockAccess) continue;
    LandlockDenial denial;
    denial.domain = number_field<std::uint64_t>(record.body, "domain", 16);
    denial.creator = creator;
    denial.caller = caller;
    denial.caller_comm = comm;
    denial.caller_exe = exe;
    const std::string blockers = audit_field(record.body, "blockers").value_or("");
    std::string object = audit_field(record.body, "path").value_or("");
    if (object.empty()) {
      if (const auto target = audit_field(record.body, "opid")) object = "pid " + *target;
    }
    denial.refusal = describe_landlock_blockers(blockers, object);
    out.push_back(std::move(denial));
  }
}

std::vector<LandlockDenial> LandlockAuditEvents::take_denials(bool all) {
  std::vector<LandlockDenial> denials;
  for (auto event = events_.begin(); event != events_.end();) {
    const bool evicted = events_.size() > kEventsKept && event == events_.begin();
    if (!all && !event->over && !evicted) {
      ++event;
      continue;
    }
    for (const AuditRecord& record : event->records) {
      if (record.type == kAuditLandlockDomain && audit_field(record.body, "status") == "deallocated") {
        ends_.push_back({number_field<std::uint64_t>(record.body, "domain", 16)});
      }
    }
    describe(*event, denials);
    event = events_.erase(event);
  }
  return denials;
}

std::vector<LandlockDomainEnd> LandlockAuditEvents::take_ends() { return std::exchange(ends_, {}); }

Result<UniqueFd> open_audit_log_socket() {
  UniqueFd socket(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT));
  if (!socket) return Error::from_errno(errno, "Opening an audit socket failed");
  sockaddr_nl address{};
  address.nl_family = AF_NETLINK;
  address.nl_groups = 1U << (kAuditLogGroup - 1);
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int error_number = errno;
    if (error_number == EPERM) {
      return Error::from_errno(
          error_number, "Reading the audit log needs CAP_AUDIT_READ in the host's user namespace (a root deskd)");
    }
    return Error::from_errno(error_number, "Joining the audit log's multicast group failed");
  }
  const int size = kReceiveBufferBytes;
  ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  return socket;
}

Result<bool> kernel_audit_enabled() {
  DESKD_ASSIGN_OR_RETURN(const KernelAuditStatus status, kernel_audit_status());
  return status.enabled;
}

Result<KernelAuditStatus> kernel_audit_status() {
  UniqueFd socket(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT));
  if (!socket) return Error::from_errno(errno, "Opening an audit socket failed");
  timeval deadline{1, 0};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
  nlmsghdr request{};
  request.nlmsg_len = sizeof request;
  request.nlmsg_type = kAuditGet;
  request.nlmsg_flags = NLM_F_REQUEST;
  request.nlmsg_seq = 1;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(socket.get(), &request, sizeof request, 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) <
      0) {
    return Error::from_errno(errno, "Asking the kernel's audit status failed");
  }
  alignas(nlmsghdr) char reply[8192];
  for (int attempt = 0; attempt < 4; ++attempt) {
    const ssize_t got = ::recv(socket.get(), reply, sizeof reply, 0);
    if (got < static_cast<ssize_t>(sizeof(nlmsghdr)))
      return Error::from_errno(errno, "Reading the audit status failed");
    const auto* header = reinterpret_cast<const nlmsghdr*>(reply);
    if (header->nlmsg_type == NLMSG_ERROR) {
      int error_number = 0;
      std::memcpy(&error_number, NLMSG_DATA(header), sizeof error_number);
      if (error_number != 0) return Error::from_errno(-error_number, "The kernel refused to tell its audit status");
      continue;  // an acknowledgement
    }
    // struct audit_status: mask, enabled, failure, pid, rate_limit, backlog_limit, lost, backlog.
    if (header->nlmsg_type == kAuditGet && got >= static_cast<ssize_t>(NLMSG_HDRLEN + 8 * sizeof(std::uint32_t))) {
      std::uint32_t status[8];
      std::memcpy(status, NLMSG_DATA(header), sizeof status);
      return KernelAuditStatus{status[1] != 0, status[7]};
    }
  }
  return Error::make(ErrorCode::system, "The kernel did not tell its audit status.");
}

}  // namespace deskd::sandbox
