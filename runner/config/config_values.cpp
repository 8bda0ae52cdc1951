#include "runner/config/config_values.h"

#include <unordered_set>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <tuple>

#include "policy/confinement.h"
#include "policy/path_resolution.h"

namespace deskd::app {

std::string ConfigProblem::to_string() const {
  std::string text = position.file.native();
  if (position.line != 0) {
    text += ':' + std::to_string(position.line);
    if (position.column != 0) text += ':' + std::to_string(position.column);
  }
  return text + ": " + message;
}

namespace config_detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Digits only, 1..2 of them, into `value`.
bool parse_number(std::string_view text, std::size_t minimum_digits, int& value) {
  if (text.size() < minimum_digits || text.size() > 2 || !std::all_of(text.begin(), text.end(), is_digit)) {
    return false;
  }
  std::from_chars(text.data(), text.data() + text.size(), value);
  return true;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

void ProblemList::add(ConfigPosition position, std::string message) {
  problems_.push_back(ConfigProblem{std::move(position), std::move(message)});
}

std::vector<ConfigProblem> ProblemList::take() {
  const auto key = [](const ConfigProblem& problem) {
    return std::tie(problem.position.line, problem.position.column, problem.message);
  };
  std::stable_sort(problems_.begin(), problems_.end(),
                   [&](const ConfigProblem& a, const ConfigProblem& b) { return key(a) < key(b); });
  // A problem of the [model] or [sandbox] defaults shows up once per desk that copies them.
  problems_.erase(std::unique(problems_.begin(), problems_.end(),
                              [&](const ConfigProblem& a, const ConfigProblem& b) { return key(a) == key(b); }),
                  problems_.end());
  return std::move(problems_);
}

std::optional<std::array<int, 3>> parse_time_of_day(std::string_view text) {
  std::array<std::string_view, 3> parts{};
  std::size_t count = 0;
  for (std::size_t start = 0;;) {
    const std::size_t colon = text.find(':', start);
    if (count == parts.size()) return std::nullopt;
    parts[count++] = text.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (count < 2) return std::nullopt;
  std::array<int, 3> fields{0, 0, 0};
  if (!parse_number(parts[0], 1, fields[0]) || fields[0] > 23) return std::nullopt;
  for (std::size_t index = 1; index < count; ++index) {
    if (!parse_number(parts[index], 2, fields[index]) || fields[index] > 59) return std::nullopt;
  }
  return fields;
}

std::optional<unsigned> parse_weekday(std::string_view text) {
  static constexpr std::string_view kNames[] = {"sunday",   "monday", "tuesday", "wednesday",
                                                "thursday", "friday", "saturday"};
  std::string folded(text);
  std::transform(folded.begin(), folded.end(), folded.begin(), lower);
  for (unsigned day = 0; day < 7; ++day) {
    if (folded == kNames[day] || folded == kNames[day].substr(0, 3)) return day;
  }
  return std::nullopt;
}

bool is_desk_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-';
  });
}

std::string in_quotes(std::string_view text) { return '\'' + policy::printable_path(text) + '\''; }

Result<std::filesystem::path> resolve_config_path(std::string_view text, const std::filesystem::path& config_folder) {
  auto resolved = policy::resolve_path(text, config_folder);
  if (resolved.ok()) return resolved;
  const int error_number = resolved.error().error_number;
  if (error_number != EACCES && error_number != EPERM) return std::move(resolved).error();
  const std::filesystem::path requested{std::string(text)};
  auto normal = (requested.is_absolute() ? requested : config_folder / requested).lexically_normal();
  if (!normal.has_filename() && normal.has_parent_path() && normal != normal.root_path()) normal = normal.parent_path();
  return normal;
}

std::vector<std::filesystem::path> merge_hidden_paths(const DeskConfig& desk, const ConfigPosition& directory_position,
                                                      std::span<const PlacedPath> hidden, ProblemList& problems) {
  const std::string desk_name = in_quotes(desk.name);
  std::vector<std::filesystem::path> merged;
  std::unordered_set<std::string> merged_already;  // a desk may hide a thousand folders: no linear search
  for (const auto& entry : hidden) {
    // The confinement's own rule (policy::hidden_path_clash), worded here with the line.
    const auto clash = policy::hidden_path_clash(desk.directory, entry.path);
    if (clash && clash->kind == policy::HiddenPathClash::Kind::holds_desk_folder) {
      if (entry.state_folder) {
        problems.add(directory_position, "the folder of desk " + desk_name + ", " + desk.directory.native() +
                                             ", lies inside deskd's state folder " + entry.path.native() +
                                             " (line " + std::to_string(entry.position.line) + ")");
      } else {
        problems.add(entry.position, entry.label + ' ' + entry.path.native() + " holds the folder of desk " +
                                         desk_name + ", " + desk.directory.native() +
                                         ", so the desk could read nothing of its own");
      }
    } else if (clash) {
      problems.add(entry.position, entry.label + ' ' + entry.path.native() + " is a place desk " + desk_name +
                                       " must be able to write");
    }
    if (merged_already.insert(entry.path.native()).second) merged.push_back(entry.path);
  }
  return merged;
}

}  // namespace config_detail
}  // namespace deskd::app
