#pragma once
// The host uid and gid each desk's sandbox runs as under a root deskd: one of its own from
// [runner]'s desk uid range, the same across restarts, because the desk's files are owned by
// it. Allocations live in <state folder>/desk-ids, one "NAME UID" line per desk. A desk keeps
// its id forever, also after it leaves the config, so that no later desk inherits its files;
// a new desk takes the lowest free id of the range. A daemon chooses the ids of all the desks
// it is about to start in one call (desk_ids_for_desks): one lock, one reading and at most
// one write of each file, whatever the number of desks.

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "runner/config/config.h"
#include "sandbox/uid_registry.h"

namespace deskd::app {

struct DeskIds {
  uid_t uid = 0;
  gid_t gid = 0;  ///< always equal to uid
};

/// <state folder>/desk-ids.
std::filesystem::path desk_ids_file(const Config& config);

/// The ids of desk `desk_name` (never 0 or 65534). Reads the file afresh; when the desk has
/// no line yet, takes the lowest free id of the range and writes the file again (temporary
/// file, fsync, rename), creating the state folder if need be. Refuses, naming file:line, a
/// damaged line (not "NAME UID", a name or id listed twice) and an id outside the configured
/// range — never reallocating silently; also a range with no free id left.
/// Under the host-wide uid register's lock (uid_registry.h): an id another deskd's desk
/// holds (or the ad-hoc commands' id) is never taken, and the desk's id and `desk_folder`
/// are recorded there, so ad-hoc commands refuse its folder. An id this file already gives
/// the desk but the register gives another deskd's desk is refused, naming both.
Result<DeskIds> desk_ids_for(const Config& config, const std::string& desk_name,
                             const std::filesystem::path& desk_folder = {},
                             const std::filesystem::path& registry_file = sandbox::kUidRegistryFile);

/// A desk whose ids are wanted: its name, and its folder for the uid register.
struct DeskToIdentify {
  std::string name;
  std::filesystem::path folder;
};

/// desk_ids_for for many desks at once: the register locked and read once, the file read
/// once, each desk without a line given the lowest free id (in the order of `desks`), the
/// file written once (durably) if a desk was added, then the register once if it changed.
/// The outer error is what fails them all (the register's lock, a damaged file, a state
/// folder that cannot be written); a desk's own refusal (not a desk name, its id registered
/// to another deskd's desk, no id left) is its entry's error, with desk_ids_for's words.
Result<std::map<std::string, Result<DeskIds>>> desk_ids_for_desks(
    const Config& config, const std::vector<DeskToIdentify>& desks,
    const std::filesystem::path& registry_file = sandbox::kUidRegistryFile);

/// The ids the file has handed out so far, by desk name, without handing out any; empty when
/// there is no file yet. Refuses what desk_ids_for refuses. For `deskd doctor`.
Result<std::map<std::string, uid_t>> read_desk_ids(const Config& config);

}  // namespace deskd::app
