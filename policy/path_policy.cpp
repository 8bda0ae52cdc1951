#include "policy/path_policy.h"

#include "policy/path_resolution.h"

namespace deskd::policy {

Result<PathPolicy> PathPolicy::create(const std::filesystem::path& desk_directory,
                                      std::span<const std::filesystem::path> hidden_paths) {
  DESKD_ASSIGN_OR_RETURN(auto confinement, Confinement::create(desk_directory, hidden_paths));
  return PathPolicy(std::move(confinement));
}

Result<std::filesystem::path> PathPolicy::resolve(std::string_view requested) const {
  return resolve_path(requested, desk_directory(), calls_ != nullptr ? *calls_ : own_file_system_calls(),
                      confinement_.hidden_paths());
}

Result<std::filesystem::path> PathPolicy::readable(std::string_view requested) const {
  DESKD_ASSIGN_OR_RETURN(auto path, resolve(requested));
  if (confinement_.hiding(path) != nullptr) {
    return Error::make(ErrorCode::refused,
                       printable_path(requested) + " holds secrets and cannot be read.");
  }
  return path;
}

Result<std::filesystem::path> PathPolicy::writable(std::string_view requested) const {
  DESKD_ASSIGN_OR_RETURN(auto path, resolve(requested));
  if (confinement_.writable_place_for(path) == nullptr) {
    return Error::make(
        ErrorCode::refused,
        printable_path(requested) +
            " cannot be written. You may write only inside memory/, notes/ and scratch/ of your "
            "desk folder, and your Memory.md. Propose changes to the user's files with "
            "propose_file_change.");
  }
  if (confinement_.hiding(path) != nullptr) {
    return Error::make(ErrorCode::refused,
                       printable_path(requested) + " holds secrets and cannot be written.");
  }
  return path;
}

}  // namespace deskd::policy
