#include "sandbox/uid_registry.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <system_error>
#include <unordered_map>

#include "policy/path_resolution.h"
#include "policy/safe_file.h"

namespace deskd::sandbox {
namespace {

constexpr std::size_t kMaximumRegistryBytes = std::size_t{8} << 20;

bool is_live(const UidRegistration& entry) {
  std::error_code error;
  return std::filesystem::exists(entry.state_folder / "desk-ids", error);
}

// Fields are separated by tabs; a backslash, tab or newline inside one is escaped. Plain
// text rather than JSON: the lean `deskd sandbox` reads this file and links no JSON library.
std::string escaped(std::string_view field) {
  std::string text;
  for (const char c : field) {
    if (c == '\\') text += "\\\\";
    else if (c == '\t') text += "\\t";
    else if (c == '\n') text += "\\n";
    else text += c;
  }
  return text;
}

std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> fields(1);
  for (std::size_t index = 0; index < line.size(); ++index) {
    const char c = line[index];
    if (c == '\t') {
      fields.emplace_back();
    } else if (c == '\\' && index + 1 < line.size()) {
      const char next = line[++index];
      fields.back() += next == 't' ? '\t' : next == 'n' ? '\n' : next;
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::vector<UidRegistration> parse(std::string_view text) {
  std::vector<UidRegistration> entries;
  // Every desk of one deskd shares its state folder: one look per folder, not per entry,
  // or a thousand desks starting would each look a thousand times.
  std::map<std::filesystem::path, bool> live_folders;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.empty() || line.front() == '#') continue;
    auto fields = fields_of(line);
    if (fields.size() != 4) continue;  // a torn line of a killed writer: the rename makes this rare
    char* end = nullptr;
    errno = 0;
    const unsigned long uid = std::strtoul(fields[0].c_str(), &end, 10);
    if (errno != 0 || end == fields[0].c_str() || *end != '\0' || uid > 4294967294UL) continue;
    UidRegistration entry{static_cast<uid_t>(uid), fields[1], fields[2], fields[3]};
    auto [known, inserted] = live_folders.try_emplace(entry.state_folder, false);
    if (inserted) known->second = is_live(entry);
    if (known->second) entries.push_back(std::move(entry));
  }
  return entries;
}

std::string serialise(const std::vector<UidRegistration>& entries) {
  std::string text =
      "# deskd: the uid of every desk of every root deskd on this host (uid, state folder, desk, desk folder).\n"
      "# Written by deskd under the lock beside it; entries of a state folder without desk-ids are dropped.\n";
  for (const auto& entry : entries) {
    text += std::to_string(entry.uid) + "\t" + escaped(entry.state_folder.native()) + "\t" + escaped(entry.desk) +
            "\t" + escaped(entry.desk_folder.native()) + "\n";
  }
  return text;
}

bool shares(const std::filesystem::path& left, const std::filesystem::path& right) {
  return policy::is_same_or_inside(left, right) || policy::is_same_or_inside(right, left);
}

}  // namespace

Result<UidRegistry> UidRegistry::lock(const std::filesystem::path& file) {
  std::error_code error;
  std::filesystem::create_directories(file.parent_path(), error);
  if (error) {
    return Error{ErrorCode::system, error.value(),
                 "The uid register's folder " + file.parent_path().native() + " cannot be created: " +
                     error.message() + "."};
  }
  const std::string lock_path = file.native() + ".lock";
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock) return Error::from_errno(errno, "Opening the uid register's lock " + lock_path + " failed");
  if (retry_on_eintr([&] { return ::flock(lock.get(), LOCK_EX); }) != 0) {
    return Error::from_errno(errno, "Locking the uid register " + lock_path + " failed");
  }
  auto contents = policy::SafeFile::read(file, kMaximumRegistryBytes);
  std::vector<UidRegistration> entries;
  if (contents.ok()) {
    entries = parse(contents->bytes);
  } else if (contents.error().code != ErrorCode::not_found) {
    return Error::make(contents.error().code, "Reading the uid register: " + contents.error().what);
  }
  return UidRegistry(file, std::move(lock), std::move(entries));
}

const UidRegistration* UidRegistry::holder_of(uid_t uid) const {
  for (const auto& entry : entries_) {
    if (entry.uid == uid) return &entry;
  }
  return nullptr;
}

const UidRegistration* UidRegistry::desk_sharing_folder(const std::filesystem::path& folder) const {
  for (const auto& entry : entries_) {
    if (shares(folder, entry.desk_folder)) return &entry;
  }
  return nullptr;
}

Result<void> UidRegistry::record(const UidRegistration& registration) {
  DESKD_ASSIGN_OR_RETURN(std::vector<Result<void>> recorded, record_all({registration}));
  return std::move(recorded.front());
}

Result<std::vector<Result<void>>> UidRegistry::record_all(const std::vector<UidRegistration>& registrations) {
  // By uid, so that a thousand desks of one deskd are not a thousand walks of the register.
  std::unordered_map<uid_t, std::size_t> index_of_uid;
  for (std::size_t index = 0; index < entries_.size(); ++index) index_of_uid.emplace(entries_[index].uid, index);
  std::vector<Result<void>> recorded;
  recorded.reserve(registrations.size());
  bool changed = false;
  for (const auto& registration : registrations) {
    const auto known = index_of_uid.find(registration.uid);
    if (known == index_of_uid.end()) {
      index_of_uid.emplace(registration.uid, entries_.size());
      entries_.push_back(registration);
      changed = true;
      recorded.emplace_back();
      continue;
    }
    UidRegistration& entry = entries_[known->second];
    if (entry.state_folder != registration.state_folder || entry.desk != registration.desk) {
      recorded.emplace_back(Error::make(
          ErrorCode::refused,
          "The uid " + std::to_string(registration.uid) + " of desk '" + registration.desk +
              "' is also given to desk '" + entry.desk + "' of the deskd whose state folder is " +
              entry.state_folder.native() +
              "; two deskd must never share a desk uid. Give one of them another desk uid range "
              "([runner] desk_uid_first) and chown its desks' files."));
      continue;
    }
    if (entry.desk_folder != registration.desk_folder) {
      entry.desk_folder = registration.desk_folder;
      changed = true;
    }
    recorded.emplace_back();
  }
  if (changed) {
    DESKD_RETURN_IF_ERROR(
        policy::SafeFile::write(file_, serialise(entries_), policy::WriteMode::replace_durably, file_.parent_path()));
  }
  return recorded;
}

Result<void> refuse_served_desk_folder(const std::filesystem::path& folder, const std::filesystem::path& registry_file) {
  DESKD_ASSIGN_OR_RETURN(UidRegistry registry, UidRegistry::lock(registry_file));
  const UidRegistration* served = registry.desk_sharing_folder(folder);
  if (served == nullptr) return success();
  return Error::make(ErrorCode::refused,
                     "The folder " + policy::printable_path(folder.native()) + " belongs to desk '" + served->desk +
                         "' (its folder is " + policy::printable_path(served->desk_folder.native()) +
                         "), served by the deskd whose state folder is " + served->state_folder.native() +
                         "; an ad-hoc command would hand its places to another uid. Talk to the desk with deskctl, "
                         "or copy the folder.");
}

Result<void> settle_ad_hoc_ids(const std::filesystem::path& folder, SandboxSettings& settings) {
  if (::geteuid() != 0) return success();
  std::error_code error;
  const auto resolved = std::filesystem::weakly_canonical(folder, error);
  DESKD_RETURN_IF_ERROR(refuse_served_desk_folder(error ? folder : resolved));
  if (!settings.uid && !settings.gid) {
    settings.uid = kAdHocDeskUid;
    settings.gid = kAdHocDeskUid;
  }
  return success();
}

}  // namespace deskd::sandbox
