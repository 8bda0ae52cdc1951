#include "unit/policy/desk_fixture.h"

#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace deskd::policy::testing {

void DeskFixture::SetUp() {
  std::string pattern = (std::filesystem::temp_directory_path() / "deskd-policy-XXXXXX").native();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << "mkdtemp failed for " << pattern;
  // Resolved because the temporary folder may itself be reached through a link (/tmp on
  // some systems), and the policy returns resolved paths.
  root_ = std::filesystem::canonical(pattern);
  desk_ = root_ / "desk";

  for (const char* folder : {"memory", "notes", "scratch"}) {
    std::filesystem::create_directories(desk_ / folder);
  }
  write_file(desk_ / "Memory.md", "# Memory\n");
  write_file(desk_ / "plan.md", kPlan);
  std::filesystem::create_directory(secrets());
  write_file(secret_key(), kSecret);
  write_file(token(), kToken);

  const auto hidden = hidden_paths();
  auto created = PathPolicy::create(desk_, hidden);
  ASSERT_TRUE(created.ok()) << created.error().what;
  policy_.emplace(std::move(created).value());
}

void DeskFixture::TearDown() {
  policy_.reset();
  if (root_.empty()) return;
  std::error_code error;
  // remove_all removes links without following them, so a link planted by a test can
  // never make the clean-up delete something outside the root.
  std::filesystem::remove_all(root_, error);
  EXPECT_FALSE(error) << "could not remove " << root_ << ": " << error.message();
}

void write_file(const std::filesystem::path& path, std::string_view contents) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  stream.close();
  if (!stream) ADD_FAILURE() << "could not write " << path;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    ADD_FAILURE() << "could not read " << path;
    return {};
  }
  return std::string(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
}

void make_symlink(const std::filesystem::path& target, const std::filesystem::path& link) {
  std::error_code error;
  std::filesystem::create_symlink(target, link, error);
  if (error) ADD_FAILURE() << "could not link " << link << " -> " << target << ": " << error.message();
}

std::vector<std::string> entries_of(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    names.push_back(entry.path().filename().native());
  }
  if (error) ADD_FAILURE() << "could not list " << folder << ": " << error.message();
  std::sort(names.begin(), names.end());
  return names;
}

std::string outcome(const Result<std::filesystem::path>& result) {
  return result.ok() ? "allowed: " + result->native() : "refused: " + result.error().what;
}

std::string outcome(const Result<void>& result) {
  return result.ok() ? "ok" : "refused: " + result.error().what;
}

}  // namespace deskd::policy::testing
