#pragma once
// TableReader: reads one TOML table of the config, key by key, reporting each wrong type or
// out-of-range value at its node and, at the end, every key nobody asked for. Private to the
// config loader; include only from its .cpp files (toml++ is heavy to compile).

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runner/config/config.h"
#include "runner/config/config_values.h"

namespace deskd::app::config_detail {

/// sockaddr_un::sun_path holds 108 bytes including the terminating NUL.
inline constexpr std::size_t kMaximumSocketPathBytes = 107;

/// What one load shares between the readers.
struct LoadContext {
  ProblemList problems;
  std::filesystem::path folder;            ///< the config file's folder, absolute
  std::vector<PlacedPath> daemon_paths;    ///< hidden from every desk

  ConfigPosition where(const toml::source_region& source) const {
    return problems.at(source.begin.line, source.begin.column);
  }
};

/// The allowed range of a number; `open_minimum` excludes the minimum itself.
struct NumberRange {
  double minimum = 0;
  bool open_minimum = false;
  double maximum = 1e12;
};

class TableReader {
 public:
  /// `table` may be null (the table is absent): then every key reads as absent. `title`
  /// names the table in messages ("[runner]", "[[desk]]"); empty means the top level.
  /// `fallback` is the position used for an absent table.
  TableReader(const toml::table* table, std::string title, LoadContext& context, ConfigPosition fallback = {});

  const std::string& title() const { return title_; }
  /// Where the table starts (its header), or the fallback.
  ConfigPosition position() const;
  ConfigPosition where(const toml::node& node) const { return context_.where(node.source()); }
  void problem(const toml::node& node, std::string message) { context_.problems.add(where(node), std::move(message)); }
  /// Adds "TITLE needs a 'key'" at the table's position.
  void missing(std::string_view key);

  /// The node under `key`, marked as known; null when absent.
  const toml::node* find(std::string_view key);

  std::optional<std::string> string(std::string_view key);
  /// A string that must be one of `choices`.
  std::optional<std::string> choice(std::string_view key, std::initializer_list<std::string_view> choices);
  std::optional<std::string> choice(std::string_view key, std::span<const std::string_view> choices);
  std::optional<bool> boolean(std::string_view key);
  /// An integer or a float within `range`.
  std::optional<double> number(std::string_view key, NumberRange range);
  /// An integer within [minimum, maximum].
  std::optional<std::int64_t> whole(std::string_view key, std::int64_t minimum, std::int64_t maximum);
  /// An array of strings, each with its node; nullopt when absent or mistyped.
  std::optional<std::vector<std::pair<std::string, const toml::node*>>> strings(std::string_view key);
  /// A path, made absolute against the config folder and resolved; `label` names it in
  /// later messages ("the hidden path", "the API key file").
  std::optional<PlacedPath> path(std::string_view key, std::string label);
  /// An array of paths (see path()).
  std::vector<PlacedPath> paths(std::string_view key, std::string label);
  /// A sub-table; reports a non-table and returns null.
  const toml::table* table(std::string_view key);

  /// Reports every key of the table that no getter asked for.
  void report_unknown_keys() const;

 private:
  std::optional<PlacedPath> resolve(const toml::node& node, std::string_view key, std::string label);

  const toml::table* table_;
  std::string title_;
  LoadContext& context_;
  ConfigPosition fallback_;
  std::set<std::string, std::less<>> known_;
};

/// What a path must be for the config to make sense.
enum class PathKind { file, folder, file_or_folder };

/// Reports at `path.position` when `path` does not exist or is not of `kind`; `what`
/// names it ("the desk folder"). A path that cannot be examined (permission denied) passes:
/// `deskd check` may run as someone who cannot look where deskd can. Returns whether it
/// was found to be right.
/// The string under `key`, which must be there and not be empty (a problem otherwise).
std::optional<std::string> required_string(TableReader& reader, std::string_view key);

bool expect_existing(LoadContext& context, const PlacedPath& path, PathKind kind, std::string_view what);

/// The paths a [sandbox] or [desk.sandbox] table named, with where: hidden paths add up
/// (a desk's to [sandbox]'s), a list of read-only paths replaces the one before.
struct SandboxPlaces {
  std::vector<PlacedPath> hidden;
  std::vector<PlacedPath> read_only;
  std::optional<ConfigPosition> disk_quota;  ///< where the disk quota that applies was written
  std::optional<ConfigPosition> allowed_hosts;  ///< where the 'allowed_hosts' that applies was written
};

/// Reads [desk] tables' model and sandbox overrides with the same readers as the defaults.
void read_model(TableReader& reader, ModelConfig& model, LoadContext& context);
void read_sandbox(TableReader& reader, SandboxConfig& sandbox, SandboxPlaces& places, LoadContext& context);
/// Reads a [budget] or [desk.budget] table over `budget` (config_budget.cpp), noting where
/// each dollar cap was written in `places`.
void read_budget(TableReader& reader, BudgetConfig& budget, BudgetPlaces& places);
/// Refuses a dollar cap on a desk whose model has no price for its model name (a cap that
/// could not be held), at the cap's position.
void check_budget(const DeskConfig& desk, const BudgetPlaces& places, ProblemList& problems);

struct ApiDraft;

/// Reads every [[desk]] (`node` is the top-level `desk` value) into `config.desks`, merging
/// each desk's hidden paths with `global` ([sandbox]'s), the daemon's paths and the other
/// desks' folders and hidden paths, and judging the desk folders together; each desk's
/// 'apis' is resolved against `apis` (config_api.h).
void read_desks(const toml::node& node, const SandboxPlaces& global, const BudgetPlaces& global_budget,
                ConfigPosition model_position, std::span<const ApiDraft> apis, Config& config, LoadContext& context);

}  // namespace deskd::app::config_detail
