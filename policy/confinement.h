#pragma once
// Confinement: what one desk may see and change, decided once from its configuration.
// The sandbox turns it into mounts and the file tools' PathPolicy turns it into checks,
// so bash and the file tools see the same world at the same absolute paths.

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"

namespace deskd::policy {

/// One place inside the desk folder that the desk may write.
struct WritablePlace {
  enum class Kind { file, folder };
  std::filesystem::path path;  ///< Absolute, resolved.
  Kind kind = Kind::folder;
};

/// The desk's folder, its hidden paths and its writable places, each resolved once.
/// Immutable and cheap to copy (the data is shared).
class Confinement {
 public:
  /// The file the desk may rewrite, and the folders it may write inside.
  static constexpr const char* kWritableFileNames[] = {"Memory.md"};
  static constexpr const char* kWritableFolderNames[] = {"memory", "notes", "scratch"};

  /// Builds the confinement. `desk_directory` must exist and be a folder; relative hidden
  /// paths start at the desk folder. Refuses: a missing desk folder, a hidden path that
  /// cannot be resolved, a hidden path that holds the desk folder or is one of its writable
  /// places (hidden_path_clash), and a writable place that is a symbolic link (it
  /// would let writes land outside the desk folder).
  static Result<Confinement> create(const std::filesystem::path& desk_directory,
                                    std::span<const std::filesystem::path> hidden_paths);

  /// The desk's folder, resolved.
  const std::filesystem::path& desk_directory() const { return data_->desk_directory; }
  /// The hidden paths, resolved, without duplicates, in the order given.
  const std::vector<std::filesystem::path>& hidden_paths() const { return data_->hidden_paths; }
  /// Memory.md and the memory/, notes/ and scratch/ folders of the desk.
  const std::vector<WritablePlace>& writable_places() const { return data_->writable_places; }

  /// Whether the resolved `path` is a hidden path or inside one; returns that hidden path.
  const std::filesystem::path* hiding(const std::filesystem::path& path) const;
  /// The writable place that lets the resolved `path` be written: equal to a writable file,
  /// or strictly inside a writable folder. nullptr when there is none.
  const WritablePlace* writable_place_for(const std::filesystem::path& path) const;

 private:
  struct Data {
    std::filesystem::path desk_directory;
    std::vector<std::filesystem::path> hidden_paths;
    std::vector<WritablePlace> writable_places;
  };
  explicit Confinement(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

/// Why a hidden path cannot be one of a desk's: it holds the desk folder (the desk could read
/// nothing of its own), or it is one of the desk's writable places (the desk could not keep
/// its memory and notes; the places lie directly in the desk folder, so no other path
/// covers one without holding the desk folder). The one rule: Confinement::create refuses by it, and the
/// config loader asks it to name the line.
struct HiddenPathClash {
  enum class Kind { holds_desk_folder, is_writable_place };
  Kind kind;
  std::filesystem::path place;  ///< the writable place, unless kind is holds_desk_folder
};

/// The clash of `hidden` with the desk in `desk_directory` (both absolute and resolved), if
/// any. A hidden path inside a writable folder (scratch/private) is no clash.
std::optional<HiddenPathClash> hidden_path_clash(const std::filesystem::path& desk_directory,
                                                 const std::filesystem::path& hidden);

/// Creates the desk's missing writable places: the memory/, notes/ and scratch/ folders and
/// an empty Memory.md. Never follows a link; existing places are left alone.
Result<void> create_missing_writable_places(const Confinement& confinement);

}  // namespace deskd::policy
