// `deskd doctor`'s desk uid range check, on made-up /etc and /proc files.

#include "runner/app/desk_id_range_check.h"

#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace deskd::app {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

class DeskIdRangeCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/var/tmp/deskd-id-range-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
    files_ = HostIdFiles{root_ / "passwd", root_ / "group", root_ / "subuid", root_ / "subgid", root_ / "proc"};
    fs::create_directories(root_ / "proc");
    write("passwd", "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n");
    write("group", "root:x:0:\n");
    process(1, 0, 0, "systemd");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) const { std::ofstream(root_ / relative) << text; }
  void process(int pid, std::uint64_t uid, int parent = 1, const std::string& name = "bash") const {
    fs::create_directories(root_ / "proc" / std::to_string(pid));
    const std::string id = std::to_string(uid);
    write("proc/" + std::to_string(pid) + "/status",
          "Name:\t" + name + "\nPPid:\t" + std::to_string(parent) + "\nUid:\t" + id + "\t" + id + "\t" + id +
              "\t" + id + "\nGid:\t0\t0\t0\t0\n");
  }

  fs::path root_;
  HostIdFiles files_;
};

TEST_F(DeskIdRangeCheckTest, AnUnusedRangePasses) {
  // No /etc/subuid or /etc/subgid at all is a host without subordinate ranges.
  const auto check = check_desk_id_range(1879048192, 65536, {}, true, files_);
  EXPECT_EQ(check.name, "desk uid range");
  EXPECT_TRUE(check.available);
  EXPECT_TRUE(check.required);
  EXPECT_EQ(check.detail, "1879048192...1879113727: no user, group, subordinate id range or process uses it");
  EXPECT_TRUE(check.fix.empty());
}

TEST_F(DeskIdRangeCheckTest, EveryUseOfTheRangeIsListed) {
  write("passwd", "root:x:0:0::/root:/bin/bash\nbob:x:100005:100:::\nnobody:x:65534:65534:::\n");
  write("group", "root:x:0:\nbobs:x:100007:\n");
  write("subuid", "alice:99000:1001\ncarol:200000:65536\n");
  write("subgid", "alice:100010:5\n");
  process(42, 100003);
  const auto check = check_desk_id_range(100000, 10, {}, false, files_);
  EXPECT_FALSE(check.available);
  EXPECT_FALSE(check.required);
  EXPECT_EQ(check.detail, "100000...100009 is in use: users 'bob' (uid 100005) in " + (root_ / "passwd").native() +
                              "; groups 'bobs' (gid 100007) in " + (root_ / "group").native() +
                              "; subordinate id ranges " + (root_ / "subuid").native() +
                              " gives 'alice' 99000...100000; processes 42 (uid 100003) (deskd gives desks these "
                              "ids only when it runs as root)");
  EXPECT_THAT(check.fix, HasSubstr("desk_uid_first"));
}

TEST_F(DeskIdRangeCheckTest, TheDesksOwnProcessesAreNoStrangers) {
  process(7, 100001);
  process(8, 100002);
  const auto check = check_desk_id_range(100000, 10, {100001}, true, files_);
  EXPECT_FALSE(check.available);
  EXPECT_THAT(check.detail, HasSubstr("processes 8 (uid 100002)"));
  EXPECT_THAT(check.detail, Not(HasSubstr("processes 7")));
}

TEST_F(DeskIdRangeCheckTest, TheProcessesOfARunningDeskdAreOnlyCounted) {
  process(20, 0, 1, "deskd");
  process(21, 100001, 20, "memfd:deskd-ini");
  process(22, 100001, 21);
  process(30, 0, 1, "not-deskd");
  process(31, 100002, 30);
  const auto check = check_desk_id_range(100000, 10, {}, true, files_);
  EXPECT_FALSE(check.available);
  EXPECT_EQ(check.detail, "100000...100009 is in use: processes 31 (uid 100002) (2 processes of a running deskd's "
                          "desks not counted)");
  // A process named deskd in the range is no child of deskd.
  process(40, 100003, 1, "deskd");
  EXPECT_THAT(check_desk_id_range(100000, 10, {}, true, files_).detail, HasSubstr("40 (uid 100003)"));
}

TEST_F(DeskIdRangeCheckTest, ManyFindingsAreCut) {
  for (int pid = 10; pid < 16; ++pid) process(pid, 100000 + pid);
  const auto check = check_desk_id_range(100000, 100, {}, true, files_);
  EXPECT_THAT(check.detail, HasSubstr(" and 3 more"));
}

}  // namespace
}  // namespace deskd::app
