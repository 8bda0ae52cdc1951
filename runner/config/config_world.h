#pragma once
// One world per desk: the checks that need every desk of the config at once. Desk folders
// may not be system folders, unreachable, shared or nested, nor hold deskd's own files; and
// each desk's hidden paths get the other desks' folders and hidden paths. Private to the
// config loader (config_desk.cpp reads the desks, this judges them together).

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runner/config/config.h"
#include "runner/config/config_values.h"

namespace deskd::app::config_detail {

/// A desk as read, with what the checks after reading every desk need to know.
struct DeskDraft {
  DeskConfig desk;
  ConfigPosition directory_position;
  bool directory_found = false;
  std::vector<PlacedPath> own_hidden;  ///< its [[desk]] and [desk.sandbox] hidden paths
  std::vector<PlacedPath> hidden;      ///< its own, [sandbox]'s, then the daemon's and other desks'
  std::vector<PlacedPath> read_only;   ///< its [desk.sandbox] read_only_paths, else [sandbox]'s
  std::vector<std::pair<std::string, ConfigPosition>> readable_desks;  ///< as written
  /// For each of desk.readable_desk_folders: the desk's name and where 'readable_desks' named it.
  std::vector<std::pair<std::string, ConfigPosition>> readable_folder_names;
  ConfigPosition model_position;       ///< [desk.model], else [model], for problems of the model
  BudgetPlaces budget_places;          ///< where its dollar caps were written
  std::optional<ConfigPosition> disk_quota_position;  ///< where its disk_quota_mb was written, if it was
  /// Where the 'allowed_hosts' it takes was written ([desk.sandbox]'s or [sandbox]'s), if anywhere.
  std::optional<ConfigPosition> allowed_hosts_position;
  /// The [[api]] names of its 'apis', as written, and where 'apis' itself was written.
  std::vector<std::pair<std::string, ConfigPosition>> api_names;
  ConfigPosition apis_position;
};

/// Reports, at each desk's 'directory': a folder that is or lies in a system folder, one the
/// desk's sandbox cannot reach, one that is or nests with another desk's, and one that holds
/// deskd's state folder or socket (`daemon_paths`, those marked so).
void check_desk_folders(std::span<const DeskDraft> drafts, std::span<const PlacedPath> daemon_paths,
                        ProblemList& problems);

/// Fills each desk's readable_desks and readable_desk_folders, and adds to its `hidden` every
/// other desk's folder (but those it may read) and every other desk's own hidden paths.
/// Reports unknown names and a desk's own name in 'readable_desks', and another desk's
/// hidden path that would cover this desk's folder or one of its writable places.
void meet_other_desks(std::span<DeskDraft> drafts, ProblemList& problems);

/// Reports an 'allowed_hosts' list that no desk's network uses: one in a [desk.sandbox]
/// whose network is not "allowlist" (an empty list under "none" grants and hides nothing,
/// so it passes), and one in [sandbox] that every desk either replaces or runs without
/// the allowlist (`global_position`: where [sandbox] wrote it, if it did).
void check_allowed_hosts(std::span<const DeskDraft> drafts, const std::optional<ConfigPosition>& global_position,
                         ProblemList& problems);

/// Once `draft.desk.hidden_paths` is merged: reports a read-only path or a readable desk's
/// folder that lies inside one of them, where the desk could never see it.
void check_shown_paths(const DeskDraft& draft, ProblemList& problems);

}  // namespace deskd::app::config_detail
