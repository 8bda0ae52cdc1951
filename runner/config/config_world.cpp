// The checks that judge the desks of a config together, and the hidden paths each desk gets
// from the others. See config_world.h.

#include "runner/config/config_world.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "policy/confinement.h"
#include "policy/path_resolution.h"
#include "runner/config/config_confinement.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::app::config_detail {
namespace {

using std::filesystem::path;
using policy::is_same_or_inside;

// " (line 3)" when the file says where, for a problem reported at another place.
std::string line_of(const ConfigPosition& position) {
  return position.line == 0 ? std::string() : " (line " + std::to_string(position.line) + ")";
}

std::string folder_of(const DeskDraft& draft) {
  return "the folder of desk " + in_quotes(draft.desk.name) + ", " + draft.desk.directory.native() + ",";
}

// is_same_or_inside for the config's paths, which are absolute and lexically normal: a
// comparison of their text, since the checks below compare every desk with every other.
bool same_or_inside_text(const path& inner, const path& outer) {
  const std::string& in = inner.native();
  const std::string& out = outer.native();
  if (!in.starts_with(out)) return false;
  return in.size() == out.size() || out.ends_with('/') || in[out.size()] == '/';
}

bool nest(const path& a, const path& b) { return same_or_inside_text(a, b) || same_or_inside_text(b, a); }

void check_nesting(const DeskDraft& earlier, const DeskDraft& later, ProblemList& problems) {
  const path& folder = later.desk.directory;
  const path& other = earlier.desk.directory;
  const std::string other_desk = "desk " + in_quotes(earlier.desk.name);
  if (folder == other) {
    problems.add(later.directory_position, folder_of(later) + " is the folder of " + other_desk + " too" +
                                               line_of(earlier.directory_position) +
                                               "; desks are strangers, each needs a folder of its own");
  } else if (is_same_or_inside(folder, other) || is_same_or_inside(other, folder)) {
    const std::string relation = is_same_or_inside(folder, other) ? " lies inside " : " holds ";
    problems.add(later.directory_position, folder_of(later) + relation + "the folder of " + other_desk + ", " +
                                               other.native() + line_of(earlier.directory_position) +
                                               "; desks are strangers, so no desk's folder may hold another's");
  }
}

void check_daemon_paths(const DeskDraft& draft, std::span<const PlacedPath> daemon_paths, ProblemList& problems) {
  for (const auto& entry : daemon_paths) {
    // A desk folder inside (or equal to) the state folder is merge_hidden_paths' to report.
    const bool held = entry.state_folder ? policy::is_strictly_inside(entry.path, draft.desk.directory)
                                         : entry.socket && is_same_or_inside(entry.path, draft.desk.directory);
    if (!held) continue;
    const std::string what = entry.state_folder ? "state folder " : "socket ";
    problems.add(draft.directory_position,
                 folder_of(draft) + " holds deskd's " + what + entry.path.native() + line_of(entry.position) +
                     "; deskd's own files never lie in a desk's world, so move the " + what.substr(0, what.size() - 1) +
                     " out of every desk folder");
  }
}

std::vector<path> writable_places(const path& folder) {
  std::vector<path> places;
  for (const char* name : policy::Confinement::kWritableFileNames) places.push_back(folder / name);
  for (const char* name : policy::Confinement::kWritableFolderNames) places.push_back(folder / name);
  return places;
}

// Whether another desk's hidden path may be hidden from `draft` too; reports it when not.
bool may_hide_from(const PlacedPath& entry, const DeskDraft& owner, const DeskDraft& draft, ProblemList& problems) {
  const std::string hidden = "the hidden path " + entry.path.native() + " of desk " + in_quotes(owner.desk.name);
  const std::string desk = "desk " + in_quotes(draft.desk.name);
  const std::string why = "; a desk's hidden paths are hidden from every other desk too";
  if (is_same_or_inside(draft.desk.directory, entry.path)) {
    problems.add(entry.position, hidden + " holds " + folder_of(draft) + " so " + desk +
                                     " could read nothing of its own" + why);
    return false;
  }
  for (const auto& place : writable_places(draft.desk.directory)) {
    if (!is_same_or_inside(place, entry.path)) continue;
    const std::string what = place == entry.path ? " is " : " covers " + place.native() + ", ";
    problems.add(entry.position, hidden + what + "a place " + desk + " must be able to write" + why);
    return false;
  }
  return true;
}

// The desks `draft` names in 'readable_desks', by index, each once, with where it named
// them; reports wrong names.
std::vector<std::pair<std::size_t, ConfigPosition>> readable_indices(const DeskDraft& draft,
                                                                     const std::map<std::string, std::size_t>& names,
                                                                     ProblemList& problems) {
  std::vector<std::pair<std::size_t, ConfigPosition>> indices;
  for (const auto& [name, position] : draft.readable_desks) {
    const auto found = names.find(name);
    if (name == draft.desk.name) {
      problems.add(position, "desk " + in_quotes(name) +
                                 " names itself in 'readable_desks'; a desk always reads its own folder");
    } else if (found == names.end()) {
      std::string known;
      for (const auto& [other, index] : names) known += (known.empty() ? "" : ", ") + other;
      problems.add(position, "'readable_desks' names " + in_quotes(name) +
                                 ", but no desk of this config is called that; the desks are " + known);
    } else if (std::none_of(indices.begin(), indices.end(),
                            [&](const auto& entry) { return entry.first == found->second; })) {
      indices.emplace_back(found->second, position);
    }
  }
  return indices;
}

}  // namespace

void check_desk_folders(std::span<const DeskDraft> drafts, std::span<const PlacedPath> daemon_paths,
                        ProblemList& problems) {
  // A folder such as / or /etc would also hold every other desk and deskd's files: saying
  // that too would bury the one problem under its consequences.
  std::vector<bool> well_placed(drafts.size(), false);
  for (std::size_t index = 0; index < drafts.size(); ++index) {
    const DeskDraft& draft = drafts[index];
    if (!draft.directory_found) continue;
    const std::string desk = "desk " + in_quotes(draft.desk.name) + ": ";
    if (auto placed = check_desk_folder_placement(draft.desk.directory); !placed.ok()) {
      problems.add(draft.directory_position, desk + placed.error().what);
      continue;
    }
    well_placed[index] = true;
    if (auto reached = check_desk_folder_reachable(draft.desk.directory, ::geteuid(), draft.desk.sandbox.host_view); !reached.ok()) {
      problems.add(draft.directory_position, desk + reached.error().what);
    }
    for (std::size_t earlier = 0; earlier < index; ++earlier) {
      if (well_placed[earlier]) check_nesting(drafts[earlier], draft, problems);
    }
    check_daemon_paths(draft, daemon_paths, problems);
  }
}

}  // namespace deskd::app::config_detail

namespace deskd::app {

bool in_sight(const DeskConfig& desk, const std::filesystem::path& hidden) {
  using config_detail::same_or_inside_text;
  if (desk.sandbox.host_view != sandbox::HostView::minimal) return true;
  using std::filesystem::path;
  const auto meets = [&](const path& place) {
    return same_or_inside_text(hidden, place) || same_or_inside_text(place, hidden);
  };
  if (meets(desk.directory)) return true;
  for (const char* folder : sandbox::kShownSystemFolders) {
    if (meets(path(folder))) return true;
  }
  // Proposals may name files under proposable_paths, which deskd writes for the desk once a
  // person accepts: another desk's folder there must stay hidden from this one.
  return std::any_of(desk.sandbox.read_only_paths.begin(), desk.sandbox.read_only_paths.end(), meets) ||
         std::any_of(desk.readable_desk_folders.begin(), desk.readable_desk_folders.end(), meets) ||
         std::any_of(desk.proposable_paths.begin(), desk.proposable_paths.end(), meets);
}

}  // namespace deskd::app

namespace deskd::app::config_detail {

void meet_other_desks(std::span<DeskDraft> drafts, ProblemList& problems) {
  std::map<std::string, std::size_t> names;
  for (std::size_t index = 0; index < drafts.size(); ++index) {
    if (!drafts[index].desk.name.empty()) names.emplace(drafts[index].desk.name, index);
  }
  for (std::size_t index = 0; index < drafts.size(); ++index) {
    DeskDraft& draft = drafts[index];
    const auto readable = readable_indices(draft, names, problems);
    for (const auto& [other, position] : readable) {
      draft.desk.readable_desks.push_back(drafts[other].desk.name);
      if (!drafts[other].directory_found) continue;
      draft.desk.readable_desk_folders.push_back(drafts[other].desk.directory);
      draft.desk.sandbox.read_only_paths.push_back(drafts[other].desk.directory);
      draft.readable_folder_names.emplace_back(drafts[other].desk.name, position);
    }
    if (!draft.directory_found) continue;
    for (std::size_t other_index = 0; other_index < drafts.size(); ++other_index) {
      const DeskDraft& other = drafts[other_index];
      // Nesting desks are refused already; hiding one from the other would say it twice.
      if (other_index == index || !other.directory_found || nest(draft.desk.directory, other.desk.directory)) continue;
      if (std::none_of(readable.begin(), readable.end(), [&](const auto& entry) { return entry.first == other_index; }) &&
          in_sight(draft.desk, other.desk.directory)) {
        draft.hidden.push_back(
            PlacedPath{other.desk.directory, other.directory_position, "the folder of desk " + in_quotes(other.desk.name)});
      }
      for (const auto& entry : other.own_hidden) {
        if (in_sight(draft.desk, entry.path) && may_hide_from(entry, other, draft, problems)) draft.hidden.push_back(entry);
      }
    }
  }
}

void check_shown_paths(const DeskDraft& draft, ProblemList& problems) {
  const std::string desk = "desk " + in_quotes(draft.desk.name);
  const auto hidden_holding = [&](const path& shown) {
    return std::find_if(draft.desk.hidden_paths.begin(), draft.desk.hidden_paths.end(),
                        [&](const path& hidden) { return is_same_or_inside(shown, hidden); });
  };
  for (const auto& entry : draft.read_only) {
    const auto hidden = hidden_holding(entry.path);
    if (hidden == draft.desk.hidden_paths.end()) continue;
    problems.add(entry.position, "the read-only path " + entry.path.native() + " is hidden from " + desk + " (by " +
                                     hidden->native() +
                                     "), so the desk could never read it; to let a desk read another desk's "
                                     "folder, name that desk in 'readable_desks'");
  }
  for (std::size_t index = 0; index < draft.desk.readable_desk_folders.size(); ++index) {
    const path& folder = draft.desk.readable_desk_folders[index];
    const auto hidden = hidden_holding(folder);
    if (hidden == draft.desk.hidden_paths.end()) continue;
    const auto& [name, position] = draft.readable_folder_names[index];
    problems.add(position, "desk " + in_quotes(name) + ", which 'readable_desks' names, has its folder " +
                               folder.native() + " hidden from " + desk + " (by " + hidden->native() +
                               "), so it would stay hidden");
  }
}

}  // namespace deskd::app::config_detail
