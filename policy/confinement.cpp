#include "policy/confinement.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "policy/path_resolution.h"

namespace deskd::policy {
namespace {

Result<std::filesystem::path> resolve_desk_directory(const std::filesystem::path& desk_directory) {
  const std::string& text = desk_directory.native();
  if (text.empty()) {
    return Error::make(ErrorCode::invalid_argument, "The desk folder is not given.");
  }
  std::error_code error;
  const auto current = std::filesystem::current_path(error);
  if (error && text.front() != '/') {
    return Error::make(ErrorCode::system, "The desk folder " + printable_path(text) +
                                              " is relative and the current folder is unknown.");
  }
  DESKD_ASSIGN_OR_RETURN(auto resolved, resolve_path(text, current));
  struct stat status {};
  if (::stat(resolved.c_str(), &status) != 0) {
    if (errno == ENOENT) {
      return Error::make(ErrorCode::not_found,
                         "The desk folder " + printable_path(text) + " does not exist.");
    }
    return Error::from_errno(errno, "The desk folder " + printable_path(text) + " cannot be examined");
  }
  if (!S_ISDIR(status.st_mode)) {
    return Error::make(ErrorCode::invalid_argument,
                       "The desk folder " + printable_path(text) + " is not a folder.");
  }
  return resolved;
}

}  // namespace

Result<Confinement> Confinement::create(const std::filesystem::path& desk_directory,
                                        std::span<const std::filesystem::path> hidden_paths) {
  auto data = std::make_shared<Data>();
  DESKD_ASSIGN_OR_RETURN(data->desk_directory, resolve_desk_directory(desk_directory));

  for (const auto& hidden : hidden_paths) {
    auto resolved = resolve_path(hidden.native(), data->desk_directory);
    if (!resolved.ok()) {
      return Error{resolved.error().code, resolved.error().error_number,
                   "The hidden path " + printable_path(hidden.native()) +
                       " cannot be used: " + resolved.error().what};
    }
    if (auto clash = hidden_path_clash(data->desk_directory, *resolved)) {
      const std::string named = "The hidden path " + printable_path(hidden.native());
      if (clash->kind == HiddenPathClash::Kind::holds_desk_folder) {
        return Error::make(ErrorCode::invalid_argument, named + " holds the desk folder " +
                                                            data->desk_directory.native() +
                                                            " itself, so the desk could read nothing of its own.");
      }
      return Error::make(ErrorCode::invalid_argument, named + " is the writable place " + clash->place.native() +
                                                          ", which the desk must be able to write; hide a path inside "
                                                          "it, or another one.");
    }
    if (std::find(data->hidden_paths.begin(), data->hidden_paths.end(), *resolved) ==
        data->hidden_paths.end()) {
      data->hidden_paths.push_back(std::move(resolved).value());
    }
  }

  const auto add_place = [&](const char* name, WritablePlace::Kind kind) -> Result<void> {
    const auto place = data->desk_directory / name;
    struct stat status {};
    if (::lstat(place.c_str(), &status) == 0 && S_ISLNK(status.st_mode)) {
      return Error::make(ErrorCode::refused,
                         "The writable place " + place.native() +
                             " is a symbolic link; it must be a real " +
                             (kind == WritablePlace::Kind::file ? "file" : "folder") +
                             " so that writes stay inside the desk folder.");
    }
    data->writable_places.push_back(WritablePlace{place, kind});
    return success();
  };
  for (const char* name : kWritableFileNames) {
    DESKD_RETURN_IF_ERROR(add_place(name, WritablePlace::Kind::file));
  }
  for (const char* name : kWritableFolderNames) {
    DESKD_RETURN_IF_ERROR(add_place(name, WritablePlace::Kind::folder));
  }
  return Confinement(std::move(data));
}

const std::filesystem::path* Confinement::hiding(const std::filesystem::path& path) const {
  for (const auto& hidden : data_->hidden_paths) {
    if (is_same_or_inside(path, hidden)) return &hidden;
  }
  return nullptr;
}

const WritablePlace* Confinement::writable_place_for(const std::filesystem::path& path) const {
  for (const auto& place : data_->writable_places) {
    const bool allowed = place.kind == WritablePlace::Kind::file
                             ? path == place.path
                             : is_strictly_inside(path, place.path);
    if (allowed) return &place;
  }
  return nullptr;
}

std::optional<HiddenPathClash> hidden_path_clash(const std::filesystem::path& desk_directory,
                                                 const std::filesystem::path& hidden) {
  if (is_same_or_inside(desk_directory, hidden)) return HiddenPathClash{HiddenPathClash::Kind::holds_desk_folder, {}};
  const auto clash_with = [&](const char* name) -> std::optional<HiddenPathClash> {
    auto place = desk_directory / name;
    if (place != hidden) return std::nullopt;
    return HiddenPathClash{HiddenPathClash::Kind::is_writable_place, std::move(place)};
  };
  for (const char* name : Confinement::kWritableFileNames) {
    if (auto clash = clash_with(name)) return clash;
  }
  for (const char* name : Confinement::kWritableFolderNames) {
    if (auto clash = clash_with(name)) return clash;
  }
  return std::nullopt;
}

Result<void> create_missing_writable_places(const Confinement& confinement) {
  for (const auto& place : confinement.writable_places()) {
    if (place.kind == WritablePlace::Kind::folder) {
      if (::mkdir(place.path.c_str(), 0755) != 0 && errno != EEXIST) {
        return Error::from_errno(errno, "Creating the writable folder " + place.path.native() + " failed");
      }
      continue;
    }
    const int fd = ::open(place.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
    } else if (errno != EEXIST) {
      return Error::from_errno(errno, "Creating " + place.path.native() + " failed");
    }
  }
  return success();
}

}  // namespace deskd::policy
