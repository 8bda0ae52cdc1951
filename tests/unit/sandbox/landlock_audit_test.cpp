// Landlock's audit records as deskd reads them (sandbox/landlock_audit.h). The records are
// the kernel's own examples, from Documentation/admin-guide/LSM/landlock.rst (Linux 6.15,
// "Event samples"), and one taken from this machine's kernel (6.18) for a desk's bash.

#include "sandbox/landlock_audit.h"

#include <gtest/gtest.h>

namespace deskd::sandbox {
namespace {

AuditRecord record(int type, const std::string& text) {
  auto parsed = parse_audit_record(type, text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(AuditRecord{});
}

TEST(LandlockAuditTest, ARecordGivesItsSerialAndBody) {
  const auto parsed = parse_audit_record(
      kAuditLandlockAccess,
      std::string("audit(1729738800.221:34): domain=1a6fdc679 blockers=fs.write_file path=\"/etc/passwd\" "
                  "dev=\"vda2\" ino=143821") +
          '\0');
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->serial, 34u);
  EXPECT_EQ(audit_field(parsed->body, "path"), "/etc/passwd");
  EXPECT_EQ(audit_field(parsed->body, "domain"), "1a6fdc679");
  EXPECT_EQ(audit_field(parsed->body, "missing"), std::nullopt);
  EXPECT_FALSE(parse_audit_record(kAuditLandlockAccess, "domain=1 blockers=fs.write_file").has_value());
  EXPECT_FALSE(parse_audit_record(kAuditLandlockAccess, "audit(1.2:x): domain=1").has_value());
}

TEST(LandlockAuditTest, HexEncodedNamesAreDecodedAndNumbersAreNot) {
  // audit writes a name with a space or a quote as hex: "a b" is 612062.
  const std::string body = "pid=351 comm=612062 exe=\"/usr/bin/bash\" ino=365 path=2F746D702F2261";
  EXPECT_EQ(audit_field(body, "comm"), "a b");
  EXPECT_EQ(audit_field(body, "path"), "/tmp/\"a");
  EXPECT_EQ(audit_field(body, "exe"), "/usr/bin/bash");
  EXPECT_EQ(audit_field(body, "ino"), "365");
  EXPECT_EQ(audit_field(body, "pid"), "351");
}

TEST(LandlockAuditTest, AnEventGivesOneDenialWithItsDomainCreatorAndCaller) {
  LandlockAuditEvents events;
  events.add(record(kAuditLandlockAccess,
                    "audit(1729738800.221:33): domain=1a6fdc679 blockers=fs.write_file path=\"/dev/tty\" "
                    "dev=\"devtmpfs\" ino=9"));
  events.add(record(kAuditLandlockDomain,
                    "audit(1729738800.221:33): domain=1a6fdc679 status=allocated mode=enforcing pid=289 uid=0 "
                    "exe=\"/root/sandboxer\" comm=\"sandboxer\""));
  EXPECT_TRUE(events.take_denials(false).empty()) << "the event is not over before its SYSCALL and EOE";
  events.add(record(kAuditSyscallRecord,
                    "audit(1729738800.221:33): arch=c000003e syscall=257 success=no exit=-13 ppid=272 pid=290 "
                    "auid=0 uid=0 gid=0 comm=\"sh\" exe=\"/usr/bin/dash\" key=(null)"));
  events.add(record(kAuditEndOfEvent, "audit(1729738800.221:33): "));
  const auto denials = events.take_denials(false);
  ASSERT_EQ(denials.size(), 1u);
  EXPECT_EQ(denials[0].domain, 0x1a6fdc679u);
  EXPECT_EQ(denials[0].creator, 289);
  EXPECT_EQ(denials[0].caller, 290);
  EXPECT_EQ(denials[0].caller_comm, "sh");
  EXPECT_EQ(denials[0].caller_exe, "/usr/bin/dash");
  EXPECT_EQ(denials[0].refusal.enforcer, Enforcer::landlock);
  EXPECT_EQ(denials[0].refusal.what, "write /dev/tty");
  EXPECT_EQ(denials[0].refusal.details, "blockers fs.write_file");
  EXPECT_EQ(refusal_line(denials[0].refusal),
            "deskd refused: write /dev/tty \u2014 desks may write only in their writable places, /tmp and /dev/shm");
}

TEST(LandlockAuditTest, ALaterDenialOfTheDomainHasNoCreatorAndTheEndIsTold) {
  LandlockAuditEvents events;
  events.add(record(kAuditLandlockAccess,
                    "audit(1729738800.221:34): domain=1a6fdc679 blockers=fs.make_reg,fs.refer path=\"/usr/local\" "
                    "dev=\"vda2\" ino=365"));
  events.add(record(kAuditLandlockDomain, "audit(1729738800.261:35): domain=1a6fdc679 status=deallocated denials=2"));
  // Without a syscall context the kernel sends no EOE: asked for all, both are taken.
  const auto denials = events.take_denials(true);
  ASSERT_EQ(denials.size(), 1u);
  EXPECT_EQ(denials[0].creator, 0);
  EXPECT_EQ(denials[0].caller, 0);
  EXPECT_EQ(denials[0].refusal.what, "create /usr/local");
  const auto ends = events.take_ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].domain, 0x1a6fdc679u);
}

TEST(LandlockAuditTest, ScopesAreNamedByTheirTarget) {
  LandlockAuditEvents events;
  events.add(record(kAuditLandlockAccess,
                    "audit(1729738800.268:30): domain=1a6fdc66f blockers=scope.signal opid=1 ocomm=\"systemd\""));
  const auto denials = events.take_denials(true);
  ASSERT_EQ(denials.size(), 1u);
  EXPECT_EQ(denials[0].refusal.what, "signal pid 1");
  EXPECT_EQ(denials[0].refusal.rule, "desks may signal only their own processes");
}

TEST(LandlockAuditTest, WhatADeskFloodsWithStaysBounded) {
  LandlockAuditEvents events;
  // SYSCALL and EOE records of events without a Landlock record are not kept at all.
  for (int serial = 0; serial < 1000; ++serial) {
    events.add(record(kAuditSyscallRecord, "audit(1.0:" + std::to_string(serial) + "): pid=7 comm=\"x\""));
  }
  EXPECT_TRUE(events.take_denials(true).empty());
  // Events that never end are let go beyond kEventsKept; a long path is cut.
  const std::string long_path(10000, 'a');
  std::size_t taken = 0;
  for (int serial = 0; serial < 1000; ++serial) {
    events.add(record(kAuditLandlockAccess, "audit(1.0:" + std::to_string(serial) +
                                                "): domain=1 blockers=fs.write_file path=\"/" + long_path + "\""));
    for (const auto& denial : events.take_denials(false)) {
      EXPECT_LE(denial.refusal.what.size(), 300u);
      ++taken;
    }
  }
  EXPECT_EQ(taken + events.take_denials(true).size(), 1000u);
}

TEST(LandlockAuditTest, ADesksDomainLogsAfterItsExecAndNotItsOwnDomains) {
  EXPECT_EQ(landlock_restrict_flags(6), 0u);
  EXPECT_EQ(landlock_restrict_flags(7), kLandlockLogNewExecOn | kLandlockLogSubdomainsOff);
}

}  // namespace
}  // namespace deskd::sandbox
