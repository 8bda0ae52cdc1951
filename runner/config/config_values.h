#pragma once
// The parts of the config loader that need no TOML: the problem list, the small value
// grammars (desk names, schedule times, weekdays), path resolution against the config
// folder, and the merge of a desk's hidden paths with the checks that go with it.
// Private to runner/app; config.h is the contract.

#include <array>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runner/config/config.h"

namespace deskd::app::config_detail {

/// Every problem found in one config file, in the order found.
class ProblemList {
 public:
  explicit ProblemList(std::filesystem::path file) : file_(std::move(file)) {}

  /// A position in this file (line and column 1-based; 0 when unknown).
  ConfigPosition at(std::uint32_t line, std::uint32_t column) const { return {file_, line, column}; }
  void add(ConfigPosition position, std::string message);
  std::size_t size() const { return problems_.size(); }
  /// The problems sorted by position, each reported once.
  std::vector<ConfigProblem> take();

 private:
  std::filesystem::path file_;
  std::vector<ConfigProblem> problems_;
};

/// A resolved path and where the file named it. `state_folder` marks the daemon's state
/// folder, which no desk folder may lie inside or hold; `socket` its socket, which no desk
/// folder may hold.
/// Where the dollar caps that apply to a desk were written ([desk.budget]'s or [budget]'s),
/// for the problems found once its model is known.
struct BudgetPlaces {
  std::optional<ConfigPosition> daily_usd;
  std::optional<ConfigPosition> per_turn_usd;
};

struct PlacedPath {
  std::filesystem::path path;
  ConfigPosition position;
  std::string label;  ///< "the hidden path", "the socket", ... for messages
  bool state_folder = false;
  bool socket = false;
};

/// "HH:MM" or "HH:MM:SS", 24-hour; the hour may have one digit, minutes and seconds two.
/// Returns {hour, minute, second}, or nullopt when malformed or out of range.
std::optional<std::array<int, 3>> parse_time_of_day(std::string_view text);

/// "mon" or "monday" (any case) → weekday c_encoding (0 = Sunday); nullopt otherwise.
std::optional<unsigned> parse_weekday(std::string_view text);

/// [A-Za-z0-9_-], 1 to 64 characters.
bool is_desk_name(std::string_view name);

/// `text` made absolute against `config_folder` and resolved like policy::resolve_path.
/// When a component cannot be examined (`deskd check` run by someone who may not look into
/// /etc/deskd), the path is taken lexically normalised instead of failing; malformed paths,
/// link loops and paths through a file are errors.
Result<std::filesystem::path> resolve_config_path(std::string_view text, const std::filesystem::path& config_folder);

/// Checks `desk` against `hidden` (its own entries, its sandbox's and the daemon's, each
/// with where the file named it) and returns them merged without duplicates, in order.
/// Problems: a hidden path that holds the desk folder or one of its writable places, and a
/// desk folder inside the state folder (reported at `directory_position`).
std::vector<std::filesystem::path> merge_hidden_paths(const DeskConfig& desk, const ConfigPosition& directory_position,
                                                      std::span<const PlacedPath> hidden, ProblemList& problems);

/// Quotes `text` for a message: 'text', control bytes escaped.
std::string in_quotes(std::string_view text);

}  // namespace deskd::app::config_detail
