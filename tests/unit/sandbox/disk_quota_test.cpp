// The disk quota's mounts for real (root only: it loop-mounts an image): they last as long
// as their holder and go with it, loop device included; a deskd started after a killed one
// adopts what it left, half-done or not, without stacking; and what is not deskd's (a link
// at a place, another mount) is refused and left alone. A killed deskd is a forked child
// that gives the quota and _exits without running any destructor.

#include "sandbox/disk_quota.h"

#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/confinement.h"
#include "sandbox/mount_table.h"

namespace deskd::sandbox {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr DiskQuota kSmallQuota{std::uint64_t{8} << 20, 512};
const char* const kPlaces[] = {"Memory.md", "memory", "notes", "scratch"};

// A desk folder with its places and a state folder for the quota, under /var/tmp.
class DiskQuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "a disk quota loop-mounts an image: root only, and this test runs as uid " << ::geteuid();
    char pattern[] = "/var/tmp/deskd-disk-quota-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = fs::canonical(pattern);
    fs::create_directories(root_ / "state");
    fs::create_directories(desk() / "memory");
    fs::create_directories(desk() / "notes");
    fs::create_directories(desk() / "scratch");
    std::ofstream(desk() / "Memory.md") << "remembered\n";
    std::ofstream(desk() / "notes" / "before.md") << "written before the quota\n";
    spec_.emplace(SandboxSpecBuilder(policy::Confinement::create(desk(), {}).value()).build().value());
  }

  void TearDown() override {
    if (root_.empty()) return;
    // Whatever a failing test left: detached lazily, so the folder can go.
    for (int round = 0; round < 4; ++round) {
      for (const auto& line : our_mounts()) ::umount2(line.c_str(), MNT_DETACH);
    }
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  fs::path desk() const { return root_ / "desk"; }
  fs::path quota_folder() const { return root_ / "state" / "quota"; }
  fs::path image() const { return quota_folder() / "places.img"; }

  // The mount points under this test's folder, once per mount (stacked ones repeat).
  std::vector<std::string> our_mounts() const {
    std::vector<std::string> found;
    const auto table = read_mount_table();
    if (!table.ok()) ADD_FAILURE() << table.error().what;
    if (!table.ok()) return found;
    for (const auto& mount : *table) {
      if (mount.mount_point.rfind(root_.native() + "/", 0) == 0) found.push_back(mount.mount_point);
    }
    return found;
  }

  // The loop devices whose backing file is this test's image.
  std::vector<std::string> our_loop_devices() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator("/sys/block")) {
      if (entry.path().filename().native().rfind("loop", 0) != 0) continue;
      std::ifstream backing(entry.path() / "loop" / "backing_file");
      std::string path;
      if (std::getline(backing, path) && path == image().native()) found.push_back(entry.path().filename());
    }
    return found;
  }

  std::size_t mounts_at_path(const fs::path& path) const {
    std::size_t count = 0;
    for (const auto& mount : our_mounts()) count += mount == path.native() ? 1 : 0;
    return count;
  }

  // A deskd killed after giving the quota: a child that gives it, does `then`, and _exits
  // without running a destructor.
  template <typename Then>
  void killed_deskd_gave_the_quota(Then then) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto given = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
      if (!given.ok()) ::_exit(3);
      (void)new PlacesQuotaMounts(std::move(given).value());  // never released, as by kill -9
      then();
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not give the quota";
  }

  // Each place and the image mounted exactly once, the places nosuid and nodev, one loop device.
  void expect_mounted_once() const {
    EXPECT_EQ(mounts_at_path(quota_folder() / "places"), 1u);
    struct stat image_root {};
    ASSERT_EQ(::stat((quota_folder() / "places").c_str(), &image_root), 0);
    for (const char* place : kPlaces) {
      EXPECT_EQ(mounts_at_path(desk() / place), 1u) << place;
      struct stat status {};
      ASSERT_EQ(::stat((desk() / place).c_str(), &status), 0) << place;
      EXPECT_EQ(status.st_dev, image_root.st_dev) << place << " is not on the image";
      struct statvfs flags {};
      ASSERT_EQ(::statvfs((desk() / place).c_str(), &flags), 0);
      EXPECT_TRUE(flags.f_flag & ST_NOSUID) << place;
      EXPECT_TRUE(flags.f_flag & ST_NODEV) << place;
    }
    EXPECT_EQ(our_loop_devices().size(), 1u);
  }

  void expect_nothing_left() const {
    EXPECT_THAT(our_mounts(), IsEmpty());
    EXPECT_THAT(our_loop_devices(), IsEmpty());
  }

  fs::path root_;
  std::optional<SandboxSpec> spec_;
};

TEST_F(DiskQuotaTest, TheMountsLastAsLongAsTheirHandleAndTakeTheLoopDeviceWithThem) {
  {
    auto given = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
    ASSERT_TRUE(given.ok()) << given.error().what;
    expect_mounted_once();
    std::ifstream before(desk() / "notes" / "before.md");
    std::string line;
    EXPECT_TRUE(std::getline(before, line)) << "the place's files moved into the image";
    EXPECT_EQ(line, "written before the quota");
  }
  expect_nothing_left();
  // And again: the image is made once and mounted again.
  auto again = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
  ASSERT_TRUE(again.ok()) << again.error().what;
  expect_mounted_once();
  EXPECT_TRUE(again->release().ok());
  EXPECT_FALSE(again->holds());
  expect_nothing_left();
}

TEST_F(DiskQuotaTest, TwoHoldersInOneDeskdShareTheMountsAndTheLastTakesThemDown) {
  auto first = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
  ASSERT_TRUE(first.ok()) << first.error().what;
  auto second = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);  // a reload's successor
  ASSERT_TRUE(second.ok()) << second.error().what;
  expect_mounted_once();
  ASSERT_TRUE(first->release().ok());
  expect_mounted_once();
  ASSERT_TRUE(second->release().ok());
  expect_nothing_left();
}

TEST_F(DiskQuotaTest, ADeskdStartedAfterAKilledOneAdoptsItsMountsWithoutStacking) {
  ASSERT_NO_FATAL_FAILURE(killed_deskd_gave_the_quota([] {}));
  expect_mounted_once();
  {
    auto adopted = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
    ASSERT_TRUE(adopted.ok()) << adopted.error().what;
    expect_mounted_once();
  }
  expect_nothing_left();
}

TEST_F(DiskQuotaTest, HalfDoneBindsAreFinishedAndMadeNosuidAgain) {
  ASSERT_NO_FATAL_FAILURE(killed_deskd_gave_the_quota([this] {
    // Killed between binds: scratch not bound yet, notes bound but not yet remounted nosuid.
    ::umount2((desk() / "scratch").c_str(), UMOUNT_NOFOLLOW);
    ::mount(nullptr, (desk() / "notes").c_str(), nullptr, MS_BIND | MS_REMOUNT, nullptr);
  }));
  EXPECT_EQ(mounts_at_path(desk() / "scratch"), 0u);
  {
    auto adopted = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
    ASSERT_TRUE(adopted.ok()) << adopted.error().what;
    expect_mounted_once();
  }
  expect_nothing_left();
}

TEST_F(DiskQuotaTest, AStackedCopyOfABindIsTakenOff) {
  ASSERT_NO_FATAL_FAILURE(killed_deskd_gave_the_quota([this] {
    const std::string notes = (desk() / "notes").native();
    ::mount((quota_folder() / "places" / "notes").c_str(), notes.c_str(), nullptr, MS_BIND, nullptr);
  }));
  EXPECT_EQ(mounts_at_path(desk() / "notes"), 2u);
  {
    auto adopted = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
    ASSERT_TRUE(adopted.ok()) << adopted.error().what;
    expect_mounted_once();
  }
  expect_nothing_left();
}

TEST_F(DiskQuotaTest, ALinkAtAPlaceIsNotFollowedAndWhatItPointsAtIsLeftAlone) {
  ASSERT_NO_FATAL_FAILURE(killed_deskd_gave_the_quota([this] {
    ::umount2((desk() / "scratch").c_str(), UMOUNT_NOFOLLOW);
  }));
  // Someone replaced scratch/ with a link to a mount of their own before deskd came back.
  const fs::path elsewhere = root_ / "elsewhere";
  fs::create_directories(elsewhere);
  ASSERT_EQ(::mount("tmpfs", elsewhere.c_str(), "tmpfs", 0, "size=1m"), 0);
  fs::remove_all(desk() / "scratch");
  fs::create_directory_symlink(elsewhere, desk() / "scratch");

  auto refused = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().what, HasSubstr(desk().native() + "/scratch is not a folder (a link is not followed)"));
  EXPECT_EQ(mounts_at_path(elsewhere), 1u) << "the link's target was touched";
  EXPECT_EQ(::umount2(elsewhere.c_str(), 0), 0);
  expect_nothing_left();  // nobody held the image: the refused attempt took down what it found
}

TEST_F(DiskQuotaTest, AnotherMountAtAPlaceIsRefusedAndLeftInPlace) {
  ASSERT_EQ(::mount("tmpfs", (desk() / "scratch").c_str(), "tmpfs", 0, "size=1m"), 0);
  auto refused = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().what, HasSubstr(desk().native() + "/scratch has a mount that is not the desk's image"));
  EXPECT_EQ(mounts_at_path(desk() / "scratch"), 1u);
  EXPECT_EQ(::umount2((desk() / "scratch").c_str(), 0), 0);
  expect_nothing_left();
}

TEST_F(DiskQuotaTest, AMountSomeoneStackedOnAPlaceIsLeftAloneAndTheReleaseSaysWhatStayed) {
  auto given = give_places_a_quota(*spec_, quota_folder(), kSmallQuota);
  ASSERT_TRUE(given.ok()) << given.error().what;
  ASSERT_EQ(::mount("tmpfs", (desk() / "scratch").c_str(), "tmpfs", 0, "size=1m"), 0);
  auto released = given->release();
  ASSERT_FALSE(released.ok()) << "the image's bind under the tmpfs keeps the loop device";
  EXPECT_THAT(released.error().what, HasSubstr("left something behind"));
  EXPECT_THAT(released.error().what, HasSubstr("stays attached to " + image().native()));
  EXPECT_EQ(mounts_at_path(desk() / "scratch"), 2u) << "the tmpfs on top, the image's bind below: both stay";
  EXPECT_EQ(mounts_at_path(desk() / "notes"), 0u);
  EXPECT_EQ(mounts_at_path(quota_folder() / "places"), 0u);
  EXPECT_FALSE(given->holds());
}

TEST(MountTableTest, ParsesMountinfoLinesAndDecodesEscapes) {
  const auto table = parse_mount_table(
      "36 35 98:0 / /mnt/a\\040b rw,noatime master:1 - ext3 /dev/root rw\n"
      "37 36 7:3 /notes /var/desk/notes rw,nosuid,nodev - ext4 /dev/loop3 rw\n"
      "garbage\n");
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[0].mount_point, "/mnt/a b");
  EXPECT_EQ(table[1].device, ::makedev(7, 3));
  EXPECT_EQ(table[1].root, "/notes");
  EXPECT_EQ(mounts_on_top(table, "/var/desk/notes", ::makedev(7, 3), "/notes"), 1u);
  EXPECT_EQ(mounts_on_top(table, "/var/desk/notes", ::makedev(7, 4), "/notes"), 0u);
}

}  // namespace
}  // namespace deskd::sandbox
