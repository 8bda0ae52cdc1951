#include "runner/daemon/desk_ids.h"

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <vector>

#include "policy/safe_file.h"
#include "runner/config/config_values.h"

namespace deskd::app {
namespace {

constexpr std::size_t kMaximumIdsFileBytes = std::size_t{1} << 20;
constexpr std::uint64_t kOverflowId = 65534;

constexpr std::string_view kHeader =
    "# deskd: the host uid (and gid) of each desk's sandbox under a root deskd, one \"NAME UID\"\n"
    "# a line. A desk keeps its id forever, even after it leaves the config, so that no later\n"
    "# desk inherits its files. Written by deskd; edit only while deskd is stopped.\n";

struct Allocation {
  std::string name;
  std::uint64_t id = 0;
};

struct Range {
  std::uint64_t first = 0;
  std::uint64_t end = 0;  // one past the last id
  bool contains(std::uint64_t id) const { return id >= first && id < end && id != 0 && id != kOverflowId; }
  std::string describe() const {
    return std::to_string(first) + "..." + std::to_string(end - 1) + " ([runner] desk_uid_first, desk_uid_count)";
  }
};

Range range_of(const Config& config) {
  return Range{config.runner.desk_uid_first, std::uint64_t{config.runner.desk_uid_first} + config.runner.desk_uid_count};
}

Error damaged(const std::filesystem::path& file, std::size_t line, const std::string& what) {
  return Error::make(ErrorCode::invalid_argument,
                     file.native() + ":" + std::to_string(line) + ": " + what +
                         "; deskd never hands out desk ids again on its own, so repair the line (the desk's files "
                         "are owned by its id) and start deskd again.");
}

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (start < line.size()) {
    if (line[start] == ' ' || line[start] == '\t') {
      ++start;
      continue;
    }
    std::size_t end = start;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    fields.push_back(line.substr(start, end - start));
    start = end;
  }
  return fields;
}

std::optional<std::uint64_t> parse_id(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty() || text.size() > 10) return std::nullopt;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Every allocation of the file, checked against each other and against the range.
Result<std::vector<Allocation>> read_allocations(const std::filesystem::path& file, const Range& range) {
  auto contents = policy::SafeFile::read(file, kMaximumIdsFileBytes);
  if (!contents.ok()) {
    if (contents.error().code == ErrorCode::not_found) return std::vector<Allocation>{};
    return Error::make(contents.error().code, "Reading the desk ids: " + contents.error().what);
  }
  if (contents->truncated) {
    return Error::make(ErrorCode::invalid_argument, file.native() + " is over 1 MiB; it is not deskd's desk ids.");
  }
  std::vector<Allocation> allocations;
  std::map<std::string, std::size_t, std::less<>> lines_by_name;
  std::map<std::uint64_t, std::size_t> lines_by_id;
  std::string_view text = contents->bytes;
  for (std::size_t number = 1; !text.empty(); ++number) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    const auto fields = fields_of(line);
    if (fields.empty() || fields.front().starts_with('#')) continue;
    const auto id = fields.size() == 2 ? parse_id(fields[1]) : std::nullopt;
    if (!id) return damaged(file, number, "expected \"NAME UID\", found " + config_detail::in_quotes(line));
    const std::string name(fields[0]);
    if (!config_detail::is_desk_name(name)) {
      return damaged(file, number, config_detail::in_quotes(name) + " is not a desk name");
    }
    if (auto [first, inserted] = lines_by_name.emplace(name, number); !inserted) {
      return damaged(file, number,
                     "desk " + config_detail::in_quotes(name) + " is listed twice (first at line " +
                         std::to_string(first->second) + ")");
    }
    if (!range.contains(*id)) {
      return damaged(file, number,
                     "desk " + config_detail::in_quotes(name) + " has the id " + std::to_string(*id) +
                         ", outside the desk uid range " + range.describe() +
                         "; put the range back, or give the desk an id inside it and chown its files to it");
    }
    if (auto [first, inserted] = lines_by_id.emplace(*id, number); !inserted) {
      return damaged(file, number,
                     "the id " + std::to_string(*id) + " of desk " + config_detail::in_quotes(name) +
                         " is given to another desk at line " + std::to_string(first->second) + " too");
    }
    allocations.push_back(Allocation{name, *id});
  }
  return allocations;
}

// The ids of the range that are free: no allocation holds them, nor any deskd's desk in the
// register, nor the ad-hoc commands. Handed out lowest first; each only once.
class FreeIds {
 public:
  FreeIds(const std::vector<Allocation>& allocations, const Range& range, const sandbox::UidRegistry& registry)
      : range_(range), next_(range.first) {
    for (const auto& allocation : allocations) taken_.insert(allocation.id);
    for (const auto& entry : registry.entries()) taken_.insert(entry.uid);
    taken_.insert(sandbox::kAdHocDeskUid);
  }
  std::optional<std::uint64_t> take_lowest() {
    // Ids below next_ are all taken, so the walk over the whole batch is one pass of the
    // range: at most one step per id taken, plus 65534.
    for (; next_ < range_.end; ++next_) {
      if (range_.contains(next_) && !taken_.contains(next_)) {
        taken_.insert(next_);
        return next_++;
      }
    }
    return std::nullopt;
  }

 private:
  Range range_;
  std::uint64_t next_;
  std::set<std::uint64_t> taken_;
};

Result<DeskIds> ids_of(std::uint64_t id) { return DeskIds{static_cast<uid_t>(id), static_cast<gid_t>(id)}; }

}  // namespace

std::filesystem::path desk_ids_file(const Config& config) { return config.runner.state_folder / "desk-ids"; }

Result<std::map<std::string, uid_t>> read_desk_ids(const Config& config) {
  DESKD_ASSIGN_OR_RETURN(std::vector<Allocation> allocations, read_allocations(desk_ids_file(config), range_of(config)));
  std::map<std::string, uid_t> ids;
  for (const auto& allocation : allocations) ids.emplace(allocation.name, static_cast<uid_t>(allocation.id));
  return ids;
}

Result<std::map<std::string, Result<DeskIds>>> desk_ids_for_desks(const Config& config,
                                                                  const std::vector<DeskToIdentify>& desks,
                                                                  const std::filesystem::path& registry_file) {
  const Range range = range_of(config);
  const std::filesystem::path file = desk_ids_file(config);
  DESKD_ASSIGN_OR_RETURN(sandbox::UidRegistry registry, sandbox::UidRegistry::lock(registry_file));
  DESKD_ASSIGN_OR_RETURN(std::vector<Allocation> allocations, read_allocations(file, range));
  std::map<std::string, std::uint64_t, std::less<>> allocated;
  for (const auto& allocation : allocations) allocated.emplace(allocation.name, allocation.id);
  // The register names the state folder as this deskd's config writes it, resolved where it exists.
  std::error_code resolve_error;
  const std::filesystem::path canonical_state =
      std::filesystem::weakly_canonical(config.runner.state_folder, resolve_error);
  const std::filesystem::path& state = resolve_error ? config.runner.state_folder : canonical_state;

  std::map<std::string, Result<DeskIds>> ids;
  // The desks that have an id, in the order of `desks`, for the register.
  std::vector<sandbox::UidRegistration> registrations;
  std::vector<std::string> registered_desks;
  FreeIds free_ids(allocations, range, registry);
  bool added = false;
  for (const auto& desk : desks) {
    if (ids.contains(desk.name)) continue;  // named twice: one desk, one id
    if (!config_detail::is_desk_name(desk.name)) {
      ids.emplace(desk.name, Error::make(ErrorCode::invalid_argument,
                                         config_detail::in_quotes(desk.name) + " is not a desk name."));
      continue;
    }
    auto known = allocated.find(desk.name);
    if (known == allocated.end()) {
      const auto id = free_ids.take_lowest();
      if (!id) {
        ids.emplace(desk.name, Error::make(ErrorCode::refused,
                                           "No desk id is left for desk " + config_detail::in_quotes(desk.name) +
                                               ": " + file.native() + " holds every id of the desk uid range " +
                                               range.describe() + "; widen the range."));
        continue;
      }
      allocations.push_back(Allocation{desk.name, *id});
      known = allocated.emplace(desk.name, *id).first;
      added = true;
    }
    ids.emplace(desk.name, ids_of(known->second));
    registrations.push_back(sandbox::UidRegistration{static_cast<uid_t>(known->second), state, desk.name, desk.folder});
    registered_desks.push_back(desk.name);
  }

  if (added) {
    std::string text(kHeader);
    for (const auto& allocation : allocations) text += allocation.name + " " + std::to_string(allocation.id) + "\n";
    std::error_code error;
    std::filesystem::create_directories(config.runner.state_folder, error);
    if (error) {
      return Error::make(ErrorCode::system,
                         "Creating the state folder " + config.runner.state_folder.native() + ": " + error.message());
    }
    // Durably: once a desk has run as an id, a crash must not hand that id to another desk.
    auto written = policy::SafeFile::write(file, text, policy::WriteMode::replace_durably, config.runner.state_folder);
    if (!written.ok()) return Error::make(written.error().code, "Saving the desk ids: " + written.error().what);
  }
  // After the state folder's file exists, so the entries are live from their first reading.
  DESKD_ASSIGN_OR_RETURN(std::vector<Result<void>> recorded, registry.record_all(registrations));
  for (std::size_t index = 0; index < recorded.size(); ++index) {
    if (!recorded[index].ok()) ids.insert_or_assign(registered_desks[index], std::move(recorded[index]).error());
  }
  return ids;
}

Result<DeskIds> desk_ids_for(const Config& config, const std::string& desk_name,
                             const std::filesystem::path& desk_folder, const std::filesystem::path& registry_file) {
  // Refused before the register is locked, as it always was.
  if (!config_detail::is_desk_name(desk_name)) {
    return Error::make(ErrorCode::invalid_argument, config_detail::in_quotes(desk_name) + " is not a desk name.");
  }
  DESKD_ASSIGN_OR_RETURN(auto ids, desk_ids_for_desks(config, {DeskToIdentify{desk_name, desk_folder}}, registry_file));
  return std::move(ids.at(desk_name));
}

}  // namespace deskd::app
