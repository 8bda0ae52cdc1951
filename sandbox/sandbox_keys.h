#pragma once
// The one table of a sandbox's settings as people write them: each row is a [sandbox] key of
// deskd.toml, the command-line flag of `deskd sandbox`, `run`, `shell` and `mcp`, or both,
// with its bounds, its help line and where its value goes in SandboxSettings. The config
// reader (runner/config/config.cpp) and the command lines (runner/app/sandbox_options.cpp,
// command_options.cpp) walk it, so a new setting is a row here, its field in SandboxSettings,
// what the spec and the mount plan make of it, and their tests.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::sandbox {

/// How a setting's value is written.
enum class KeyValue {
  choice,     ///< one of `choices` (network, host_view)
  whole,      ///< a whole number within the bounds
  mebibytes,  ///< the config: whole MiB within the bounds; the command line: a SIZE (512M)
  cpus,       ///< a number of CPUs within kMinimumCpus..kMaximumCpus
  text,       ///< one word, checked by `store` (a hostname)
  list,       ///< strings, one per value, each checked by `store`; a desk's list replaces [sandbox]'s
  paths,      ///< paths; the config reader places them (hidden paths go to the confinement)
  quota,      ///< whole MiB or "none" (the config only)
  flag,       ///< true when given (a boolean in the config)
};

/// A parsed value on its way into SandboxSettings: `whole` (in bytes for mebibytes), `number`
/// (cpus) or `text` (one word, one list element, a choice).
struct KeyInput {
  std::uint64_t whole = 0;
  double number = 0;
  std::string_view text = {};
};

struct SandboxKey {
  std::string_view key = {};         ///< in [sandbox] and [desk.sandbox]; empty: the command line only
  std::string_view flag = {};        ///< e.g. "--memory"; empty: the config only
  std::string_view value_name = {};  ///< e.g. "SIZE"; empty for a flag
  KeyValue value = KeyValue::flag;
  std::uint64_t minimum = 0;  ///< whole, mebibytes (in MiB)
  std::uint64_t maximum = 0;
  std::span<const std::string_view> choices = {};
  std::string_view help = {};  ///< one sentence for --help, without the final stop
  /// Puts the value into `settings`; refuses a text that is not acceptable with a sentence
  /// fragment ("must be ..."). nullptr for the rows their readers place themselves (paths,
  /// quota, and --uid/--gid, which the command line keeps for the root ad-hoc default).
  Result<void> (*store)(SandboxSettings& settings, const KeyInput& input) = nullptr;
  /// Why a config key has no flag, or a flag no key (shown by nothing; read by people).
  std::string_view only_here_because = {};
};

/// Every row, in the order the config reads them and --help lists them.
std::span<const SandboxKey> sandbox_keys();

/// The row of config key `key`, or of flag `flag`; nullptr when there is none.
const SandboxKey* find_sandbox_key(std::string_view key);
const SandboxKey* find_sandbox_flag(std::string_view flag);

/// The range a row accepts, for an error: "16 to 1099511627776", "0.01 to 4096".
std::string key_bounds(const SandboxKey& row);

/// The command-line usage lines of every row with a flag, as `deskd sandbox --help` shows them.
std::string sandbox_flags_help();

}  // namespace deskd::sandbox
