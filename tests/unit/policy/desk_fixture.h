#pragma once
// A temporary desk for the policy tests, built fresh for every test under its own mkdtemp
// folder and removed afterwards:
//
//   <root>/desk/Memory.md, plan.md (a user's file), memory/, notes/, scratch/
//   <root>/secrets/key.txt          hidden folder holding kSecret
//   <root>/token.txt                hidden file holding kToken
//
// The root is resolved, so every path the fixture hands out is already free of links and
// compares equal to what the policy returns.

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/path_policy.h"
#include "policy/safe_file.h"

namespace deskd::policy {
// Lets the tests force SafeFile's fallback walk on a kernel that has openat2.
class SafeFileTestPeer {
 public:
  static void force_component_walk(bool on) { SafeFile::force_component_walk_ = on; }
};
}  // namespace deskd::policy

namespace deskd::policy::testing {

/// What secrets/key.txt holds; a test that finds it in anything it read has found a leak.
inline constexpr std::string_view kSecret = "SECRET-key-7f3a9c1e-never-readable";
/// What the hidden token.txt holds.
inline constexpr std::string_view kToken = "TOKEN-5b2d8e44-never-readable";
/// What the user's plan.md holds.
inline constexpr std::string_view kPlan = "The user's plan.\n";

class DeskFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  /// The fresh mkdtemp folder holding everything below.
  const std::filesystem::path& root() const { return root_; }
  const std::filesystem::path& desk() const { return desk_; }
  std::filesystem::path secrets() const { return root_ / "secrets"; }
  std::filesystem::path secret_key() const { return root_ / "secrets" / "key.txt"; }
  std::filesystem::path token() const { return root_ / "token.txt"; }
  /// The hidden folder and the hidden file, as the sandbox would be told them.
  std::vector<std::filesystem::path> hidden_paths() const { return {secrets(), token()}; }

  /// The policy for the desk and hidden_paths(), built in SetUp.
  const PathPolicy& policy() const { return *policy_; }

 private:
  std::filesystem::path root_;
  std::filesystem::path desk_;
  std::optional<PathPolicy> policy_;
};

/// Writes `contents` to `path`, replacing it; records a test failure if that fails.
void write_file(const std::filesystem::path& path, std::string_view contents);
/// The contents of `path`, or "" with a test failure if it cannot be read.
std::string read_file(const std::filesystem::path& path);
/// Creates the symbolic link `link` holding `target` exactly as given (relative or absolute).
void make_symlink(const std::filesystem::path& target, const std::filesystem::path& link);
/// The names in `folder`, sorted.
std::vector<std::string> entries_of(const std::filesystem::path& folder);

/// "allowed: <path>" or "refused: <sentence>", so one EXPECT_EQ checks the decision and the
/// exact message, and a failure prints both.
std::string outcome(const Result<std::filesystem::path>& result);
/// "ok" or "refused: <sentence>".
std::string outcome(const Result<void>& result);

/// The error code of a failed result; fails the test (and returns `internal`) on success.
template <typename T>
ErrorCode error_code_of(const Result<T>& result) {
  if (result.ok()) {
    ADD_FAILURE() << "expected an error, got success";
    return ErrorCode::internal;
  }
  return result.error().code;
}

}  // namespace deskd::policy::testing
