// Feeds arbitrary paths to PathPolicy and checks its two invariants against an
// independent, lexical re-check of the answer:
//   - a path allowed for reading is never a hidden path or inside one;
//   - a path allowed for writing is Memory.md or strictly inside memory/, notes/, scratch/,
//     and never hidden.
// The desk is full of traps: links to the secrets, to the desk root, to `/`, a link loop.

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "policy/path_policy.h"
#include "policy/path_resolution.h"

namespace {

namespace fs = std::filesystem;
using deskd::policy::is_same_or_inside;
using deskd::policy::is_strictly_inside;

struct Desk {
  fs::path root;
  fs::path desk;
  fs::path secrets;
  fs::path token;
  deskd::policy::PathPolicy policy;
};

deskd::policy::PathPolicy build_policy(const fs::path& desk, const fs::path& secrets,
                                       const fs::path& token) {
  const fs::path hidden[] = {secrets, token};
  auto policy = deskd::policy::PathPolicy::create(desk, hidden);
  if (!policy.ok()) {
    std::fprintf(stderr, "fuzz setup failed: %s\n", policy.error().what.c_str());
    std::abort();
  }
  return std::move(policy).value();
}

Desk& desk() {
  static Desk instance = [] {
    char pattern[] = "/tmp/deskd-fuzz-XXXXXX";
    const fs::path root = ::mkdtemp(pattern);
    const fs::path desk_path = root / "desk";
    const fs::path secrets = root / "secrets";
    for (const char* folder : {"memory", "notes", "scratch", "scratch/inner"}) {
      fs::create_directories(desk_path / folder);
    }
    fs::create_directories(secrets);
    std::FILE* file = std::fopen((desk_path / "Memory.md").c_str(), "w");
    std::fclose(file);
    file = std::fopen((root / "token").c_str(), "w");
    std::fclose(file);
    fs::create_symlink(secrets, desk_path / "scratch/to-secrets");
    fs::create_symlink("../../secrets", desk_path / "notes/relative-secrets");
    fs::create_symlink(desk_path, desk_path / "scratch/to-desk");
    fs::create_symlink("/", desk_path / "memory/to-root");
    fs::create_symlink("loop-b", desk_path / "scratch/loop-a");
    fs::create_symlink("loop-a", desk_path / "scratch/loop-b");
    fs::create_symlink(root / "token", desk_path / "scratch/to-token");
    fs::create_symlink(desk_path / "Memory.md", desk_path / "notes/to-memory");
    return Desk{root, desk_path, secrets, root / "token",
                build_policy(desk_path, secrets, root / "token")};
  }();
  return instance;
}

bool hidden(const Desk& state, const fs::path& path) {
  return is_same_or_inside(path, state.secrets) || is_same_or_inside(path, state.token);
}

bool in_writable_place(const Desk& state, const fs::path& path) {
  return path == state.desk / "Memory.md" || is_strictly_inside(path, state.desk / "memory") ||
         is_strictly_inside(path, state.desk / "notes") ||
         is_strictly_inside(path, state.desk / "scratch");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Desk& state = desk();
  const std::string_view requested(reinterpret_cast<const char*>(data), size);

  const auto readable = state.policy.readable(requested);
  if (readable.ok()) {
    if (!readable->is_absolute() || hidden(state, *readable)) {
      std::fprintf(stderr, "readable() allowed a hidden path: %s\n", readable->c_str());
      std::abort();
    }
  } else if (readable.error().what.empty()) {
    std::abort();
  }

  const auto writable = state.policy.writable(requested);
  if (writable.ok()) {
    if (!in_writable_place(state, *writable) || hidden(state, *writable)) {
      std::fprintf(stderr, "writable() allowed %s\n", writable->c_str());
      std::abort();
    }
  } else if (writable.error().what.empty()) {
    std::abort();
  }
  return 0;
}
