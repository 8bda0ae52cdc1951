#pragma once
// PathPolicy: decides which files a desk's file tools may read and write (the seed's
// trading_agent.tools.path_policy). A relative path starts at the desk folder; every path
// is resolved to where it really is before it is checked, so neither `../` nor a link can
// lead outside the allowed places.

#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "base/result.h"
#include "policy/confinement.h"
#include "policy/file_system_calls.h"

namespace deskd::policy {

/// The read and write rules for one desk's file tools. Refusals are Errors with code
/// `refused` (or `invalid_argument` for malformed paths) and a sentence for the model.
class PathPolicy {
 public:
  /// `calls` resolves paths (lstat, readlink): a desk's FileOpener, so links and `..` are
  /// followed in the desk's own view with its own rights; null means deskd's own calls,
  /// for tools (`deskd policy`) that act for no desk.
  explicit PathPolicy(Confinement confinement, std::shared_ptr<const FileSystemCalls> calls = nullptr)
      : confinement_(std::move(confinement)), calls_(std::move(calls)) {}

  /// Builds the confinement and the policy in one step, as the seed's constructor does.
  static Result<PathPolicy> create(const std::filesystem::path& desk_directory,
                                   std::span<const std::filesystem::path> hidden_paths);

  /// The desk's own folder, where relative paths start.
  const std::filesystem::path& desk_directory() const { return confinement_.desk_directory(); }
  const Confinement& confinement() const { return confinement_; }
  /// The same rules, resolving through `calls`.
  PathPolicy resolving_through(std::shared_ptr<const FileSystemCalls> calls) const {
    return PathPolicy(confinement_, std::move(calls));
  }

  /// Resolves a path the desk wants to read. Refuses a path that is, or is inside, a
  /// hidden path: "<p> holds secrets and cannot be read."
  Result<std::filesystem::path> readable(std::string_view requested) const;

  /// Resolves a path the desk wants to write. Allows only Memory.md itself and paths
  /// strictly inside memory/, notes/ and scratch/ (the seed's message otherwise), and never
  /// a hidden path.
  Result<std::filesystem::path> writable(std::string_view requested) const;

 private:
  Result<std::filesystem::path> resolve(std::string_view requested) const;

  Confinement confinement_;
  std::shared_ptr<const FileSystemCalls> calls_;
};

}  // namespace deskd::policy
