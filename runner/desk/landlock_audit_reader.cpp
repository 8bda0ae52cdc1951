#include "runner/desk/landlock_audit_reader.h"

#include <linux/netlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <string>
#include <thread>

#include "sandbox/landlock_rules.h"
#include "sandbox/seccomp_notification.h"

namespace deskd::desk {

namespace {

constexpr std::size_t kRecentCallersKept = 16;

// /proc/PID/stat's start time (field 22): with the pid, it names one process for good.
std::uint64_t start_time_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const std::size_t name_end = text.rfind(')');
  if (name_end == std::string::npos) return 0;
  std::size_t at = name_end + 2;  // field 3 starts here
  for (int field = 3; field < 22 && at != std::string::npos; ++field) {
    at = text.find(' ', at);
    if (at != std::string::npos) ++at;
  }
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at, nullptr, 10);
}

}  // namespace

Result<std::shared_ptr<LandlockAuditReader>> LandlockAuditReader::start(boost::asio::any_io_executor executor) {
  const int abi = sandbox::probe_landlock().abi;
  if (abi < 7) {
    return Error::make(ErrorCode::unsupported, "Landlock refusals are not reported: this kernel's Landlock ABI is " +
                                                   std::to_string(abi) + " (audit records need ABI 7, Linux 6.15).");
  }
  auto socket = sandbox::open_audit_log_socket();
  if (!socket.ok()) {
    return Error::make(socket.error().code, "Landlock refusals are not reported: " + socket.error().what);
  }
  std::shared_ptr<LandlockAuditReader> reader(new LandlockAuditReader(std::move(executor), std::move(*socket)));
  reader->arm();
  return reader;
}

LandlockAuditReader::LandlockAuditReader(boost::asio::any_io_executor executor, UniqueFd socket)
    : descriptor_(std::move(executor), socket.release()) {}

LandlockAuditReader::~LandlockAuditReader() { stop(); }

void LandlockAuditReader::stop() {
  std::lock_guard lock(mutex_);
  boost::system::error_code ignored;
  descriptor_.close(ignored);
}

void LandlockAuditReader::arm() {
  descriptor_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                         [weak = weak_from_this()](const boost::system::error_code& error) {
                           if (error) return;  // closed: the daemon is stopping
                           auto self = weak.lock();
                           if (!self) return;
                           std::vector<Delivery> deliveries;
                           bool healthy = false;
                           {
                             std::lock_guard lock(self->mutex_);
                             healthy = self->read_messages(kMessagesPerWakeUp);
                             deliveries = self->attribute(self->events_.take_denials(false));
                           }
                           for (Delivery& delivery : deliveries) delivery.reporter->record(std::move(delivery.refusal));
                           if (healthy) self->arm();
                         });
}

void LandlockAuditReader::watch(pid_t creator, std::weak_ptr<sandbox::RefusalReporter> reporter) {
  const std::uint64_t start_time = start_time_of(creator);
  if (start_time == 0) return;
  std::lock_guard lock(mutex_);
  if (creators_.size() >= kCreatorsKept) forget_ended_creators();
  if (creators_.size() >= kCreatorsKept) return;  // every one alive: this sandbox goes unreported
  creators_[creator] = Creator{start_time, std::move(reporter)};
}

void LandlockAuditReader::drain() {
  // The records a command's refusals made are queued before it ends: once the queue is
  // empty, they are in this socket. One AUDIT_GET a command, and only on a root deskd.
  const auto give_up = std::chrono::steady_clock::now() + kSettleLimit;
  for (auto status = sandbox::kernel_audit_status(); status.ok() && status->enabled && status->backlog > 0;
       status = sandbox::kernel_audit_status()) {
    if (std::chrono::steady_clock::now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::vector<Delivery> deliveries;
  {
    std::lock_guard lock(mutex_);
    if (!descriptor_.is_open()) return;
    read_messages(kMessagesPerWakeUp * 16);
    deliveries = attribute(events_.take_denials(true));
  }
  for (Delivery& delivery : deliveries) delivery.reporter->record(std::move(delivery.refusal));
}

bool LandlockAuditReader::read_messages(int budget) {
  if (!descriptor_.is_open()) return false;
  alignas(nlmsghdr) char buffer[16384];
  for (int read = 0; read < budget; ++read) {
    const ssize_t got = ::recv(descriptor_.native_handle(), buffer, sizeof buffer, MSG_DONTWAIT);
    if (got < 0) {
      if (errno == EINTR || errno == ENOBUFS) continue;  // ENOBUFS: the kernel dropped some
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (got == 0) return true;
    int remaining = static_cast<int>(got);
    for (auto* header = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(header, remaining);
         header = NLMSG_NEXT(header, remaining)) {
      const int type = header->nlmsg_type;
      if (type != sandbox::kAuditSyscallRecord && type != sandbox::kAuditEndOfEvent &&
          type != sandbox::kAuditLandlockAccess && type != sandbox::kAuditLandlockDomain) {
        continue;  // the host's other records are none of deskd's business
      }
      const std::string_view payload(static_cast<const char*>(NLMSG_DATA(header)), header->nlmsg_len - NLMSG_HDRLEN);
      if (auto record = sandbox::parse_audit_record(type, payload)) events_.add(std::move(*record));
    }
  }
  return true;
}

std::vector<LandlockAuditReader::Delivery> LandlockAuditReader::attribute(
    std::vector<sandbox::LandlockDenial> denials) {
  std::vector<Delivery> deliveries;
  for (sandbox::LandlockDenial& denial : denials) {
    ++read_;
    auto reporter = reporter_of(denial);
    if (!reporter) {
      ++unattributed_;
      continue;
    }
    denial.refusal.process = process_of(denial);
    deliveries.push_back({std::move(reporter), std::move(denial.refusal)});
  }
  for (const sandbox::LandlockDomainEnd& end : events_.take_ends()) domains_.erase(end.domain);
  return deliveries;
}

std::shared_ptr<sandbox::RefusalReporter> LandlockAuditReader::reporter_of(const sandbox::LandlockDenial& denial) {
  if (auto known = domains_.find(denial.domain); known != domains_.end()) {
    if (auto reporter = known->second.lock()) return reporter;
    domains_.erase(known);
    return nullptr;
  }
  if (denial.creator <= 0) return nullptr;
  const auto creator = creators_.find(denial.creator);
  // The same process that was watched, not a later one with its pid: a sandbox's first
  // process lives as long as any process of its domain does.
  if (creator == creators_.end() || creator->second.start_time != start_time_of(denial.creator)) return nullptr;
  auto reporter = creator->second.reporter.lock();
  if (!reporter) return nullptr;
  if (domains_.size() >= kDomainsKept) {
    std::erase_if(domains_, [](const auto& entry) { return entry.second.expired(); });
  }
  if (domains_.size() < kDomainsKept) domains_[denial.domain] = reporter;
  return reporter;
}

void LandlockAuditReader::forget_ended_creators() {
  std::erase_if(creators_, [](const auto& entry) {
    return entry.second.reporter.expired() || start_time_of(entry.first) != entry.second.start_time;
  });
}

sandbox::RefusedProcess LandlockAuditReader::process_of(const sandbox::LandlockDenial& denial) {
  sandbox::RefusedProcess process;
  if (denial.caller > 0) {
    auto recent = std::find_if(recent_callers_.begin(), recent_callers_.end(),
                               [&](const auto& entry) { return entry.first == denial.caller; });
    if (recent == recent_callers_.end()) {
      if (recent_callers_.size() >= kRecentCallersKept) recent_callers_.erase(recent_callers_.begin());
      recent_callers_.emplace_back(denial.caller, sandbox::describe_refused_process(denial.caller));
      recent = std::prev(recent_callers_.end());
    }
    process = recent->second;
  }
  // What the record says is what the caller was at the refusal; /proc may be later.
  if (!denial.caller_comm.empty()) process.comm = denial.caller_comm;
  if (!denial.caller_exe.empty()) process.exe = denial.caller_exe;
  return process;
}

std::uint64_t LandlockAuditReader::denials_read() const {
  std::lock_guard lock(mutex_);
  return read_;
}

std::uint64_t LandlockAuditReader::denials_unattributed() const {
  std::lock_guard lock(mutex_);
  return unattributed_;
}

}  // namespace deskd::desk
