#pragma once
// The daemon's config: one TOML file (toml++) with a [runner] table, [model] and [sandbox]
// defaults, and [[desk]] tables with their [[desk.schedule]] entries. Loading checks
// everything it can before a desk starts, and every problem names file:line:column, so
// that `deskd check` can print them all at once.
//
// Paths in the file that are relative start at the config file's folder. Every path the
// daemon itself owns (its state folder, its socket, every API key file) is added to every
// desk's hidden paths: no desk can read the daemon's secrets or talk to its socket. The key
// files of [[api]] credentials are among those API key files.
//
// Desks are strangers: each desk's hidden paths also hold every other desk's folder (unless
// it names that desk in `readable_desks`) and every other desk's own hidden paths. A config
// whose desk folder is a system folder, nests with another desk's, holds deskd's state
// folder or socket, or cannot be reached by the desk's sandbox is refused.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/api_rules.h"
#include "runner/desk/budget_keeper.h"
#include "runner/desk/schedule.h"
#include "sandbox/host_view.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::app {

/// Where in the config file something was written (1-based; 0 when unknown).
struct ConfigPosition {
  std::filesystem::path file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  bool operator==(const ConfigPosition&) const = default;
};

/// One thing wrong with a config: "deskd.toml:12:3: unknown key 'nmae' in [[desk]]".
struct ConfigProblem {
  ConfigPosition position;
  std::string message;
  std::string to_string() const;  ///< "file:line:column: message"
};

struct RunnerConfig {
  std::filesystem::path state_folder = "/var/lib/deskd";
  std::filesystem::path socket_path = "/run/deskd/deskd.sock";
  std::optional<std::string> socket_group;  ///< the socket's group; none: deskd's own
  std::vector<std::uint32_t> allowed_uids;  ///< besides deskd's own uid, always allowed
  std::vector<std::string> allowed_groups;  ///< peers whose primary or supplementary group is one of these
  std::string log_level = "info";           ///< trace, debug, info, warn, error
  std::chrono::milliseconds shutdown_grace = std::chrono::seconds(10);
  /// The cap on one control client's unread replies and events, in MiB: a client that lets
  /// more pile up is told it is too slow and dropped ([runner] client_buffer_mb).
  std::uint32_t client_buffer_mb = 8;
  /// How many control clients are served at once; one more is refused ([runner] max_clients).
  std::uint32_t max_clients = 256;
  /// The host uids (and gids) handed to desks under a root deskd: [first, first + count).
  /// 0x70000000 on: systemd's UIDS-GIDS.md leaves 1879048192...2147483647 unused. The range
  /// holds neither 0 nor 65534 and has room for every desk; see desk_ids.h.
  std::uint32_t desk_uid_first = sandbox::kDefaultDeskUid;
  std::uint32_t desk_uid_count = 65536;
  /// Refuse to start unless deskd itself runs in a user namespace other than the host's
  /// (a pod with hostUsers: false, a rootless container): the check Kubernetes does not make.
  bool require_user_namespace = false;
  /// [runner] web_socket as written (docs/WEB.md): none when absent, empty when "" (off).
  std::optional<std::filesystem::path> web_socket;
  /// The web page's Unix socket in effect: web_socket, or web.sock beside the control
  /// socket when it is absent; empty: none.
  std::filesystem::path web_socket_path;
  /// The web page's TCP address ([runner] web_listen): an IP address and port; the host
  /// empty: no TCP listener.
  std::string web_listen_host;
  std::uint16_t web_listen_port = 0;
  /// PEM certificate chain and key for TLS on web_listen; required unless it is loopback.
  std::filesystem::path web_tls_cert;
  std::filesystem::path web_tls_key;

  bool operator==(const RunnerConfig&) const = default;
};

/// One [runner] key as a running deskd sees it: whether a change to it needs deskd restarted,
/// and how to see that it changed. The rows stand beside read_runner (config.cpp), which reads
/// the keys; a reload (runner/daemon/daemon_reload.cpp) walks them to judge a changed [runner].
struct RunnerKey {
  /// As written in [runner]; desk_uid_first and desk_uid_count, read and checked as one
  /// range, are one row: "desk_uid_first/desk_uid_count".
  std::string_view key = {};
  /// true: taken once, at start, so a reload that changes it is refused. false: a reload
  /// takes the new value, so whatever uses it must read the daemon's config of the moment.
  bool needs_restart = true;
  /// Whether `now` and `next` hold different values for this key.
  bool (*differs)(const RunnerConfig& now, const RunnerConfig& next) = nullptr;
};

/// Every [runner] key, in the order the config reads them.
std::span<const RunnerKey> runner_keys();

/// Price of a million tokens, in US dollars, per model name.
struct ModelPrice {
  double input = 0, output = 0, cache_read = 0, cache_write = 0;

  bool operator==(const ModelPrice&) const = default;
};

/// [model] and a desk's [desk.model] overrides (a desk's table starts as a copy of [model]).
struct ModelConfig {
  std::string provider = "script";              ///< a name of model::provider_kinds()
  std::optional<std::filesystem::path> script;  ///< for "script": JSON-lines replies; none: the demo
  std::string model;                            ///< e.g. "claude-sonnet-4-5", "gpt-4.1"
  std::string base_url;                         ///< "" means the provider's public endpoint
  std::optional<std::filesystem::path> api_key_file;
  std::string api_key_variable;                 ///< an environment variable of deskd's
  std::optional<std::filesystem::path> ca_file;
  std::uint32_t max_tokens = 8192;
  /// openai: "max_completion_tokens" (OpenAI's name, which GPT-5 and the o-series need) or
  /// "max_tokens" (for OpenAI-compatible local servers that read only that).
  std::string max_tokens_field = "max_completion_tokens";
  /// openai: the API spoken, "chat_completions" (every compatible server) or "responses"
  /// (OpenAI's Responses API, which some models need).
  std::string api = "chat_completions";
  /// openai with api "responses": ask for the reasoning items' encrypted content and send
  /// it back; false for models that do not reason (gpt-4.1, gpt-4o), which refuse it.
  bool encrypted_reasoning = true;
  /// anthropic: `thinking = { budget_tokens = N }`, extended thinking's budget (at least
  /// 1024, below max_tokens); none: no extended thinking.
  std::optional<std::uint32_t> thinking_budget_tokens;
  /// A reply cut at max_tokens is followed, once per turn, by a request to go on.
  bool continue_after_max_tokens = false;
  std::optional<double> temperature;
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(120);  ///< a silent stream ends the turn
  /// A whole call, from the request to the reply's last event: a trickling stream ends the turn.
  std::chrono::milliseconds call_timeout = std::chrono::minutes(5);
  std::uint32_t max_retries = 4;
  std::uint32_t context_window = 200000;          ///< tokens
  double compaction_share = 0.8;                  ///< summarise older turns past this share
  std::map<std::string, ModelPrice> prices;       ///< [model.prices."name"]

  bool operator==(const ModelConfig&) const = default;
};

/// [sandbox] and a desk's [desk.sandbox] overrides (a desk's table starts as a copy): the
/// very value the sandbox is built from, so no setting is lost between the file and the
/// sandbox. The config decides all of a desk's value — its hostname (the desk's `hostname`,
/// else its name with '_' written as '-') and the folders of its readable_desks among its
/// read_only_paths — but for its ids under a root deskd, which the daemon chooses when it
/// starts the desk (desk_ids_for_desks). A desk's read_only_paths replace [sandbox]'s (what
/// is shared is a grant). Hidden paths are not in it: they are DeskConfig::hidden_paths, the
/// desk's Confinement, the one list both the mounts and the file tools use.
using SandboxConfig = sandbox::SandboxSettings;

/// [budget] and a desk's [desk.budget] (a desk's table starts as a copy of [budget]): the
/// desk's spend caps, each optional and positive (runner/desk/budget_keeper.h holds them).
using BudgetConfig = desk::BudgetCaps;

struct DeskConfig {
  std::string name;
  ConfigPosition position;              ///< where its [[desk]] table starts
  std::filesystem::path directory;      ///< absolute, resolved; must exist
  std::string mode = "dry_run";         ///< "dry_run" or "live"
  double timeout_seconds = 120;         ///< one bash command
  std::size_t maximum_output_characters = 20000;
  /// `idle_terminal_minutes`: the terminal (and file opener) unused this long is closed;
  /// zero: never. 30 minutes keeps a terminal through a conversation's pauses (a person
  /// reading, a model waiting on a background job), yet frees the sandbox of a desk woken
  /// by an hourly or daily schedule for the hours between; the next turn prepares a fresh
  /// one in the background, so closing costs a desk its folder and variables, not a wait.
  std::chrono::milliseconds idle_terminal = std::chrono::minutes(30);
  std::chrono::milliseconds stall_timeout = std::chrono::minutes(5);
  std::chrono::minutes catch_up_window = std::chrono::minutes(30);  ///< for missed schedules
  /// How many subagents (start_subagent) may run at once; 0 takes the tool away.
  std::size_t maximum_subagents = 4;
  /// This desk's, plus [sandbox]'s, the daemon's, then every other desk's folder (but those
  /// of readable_desks) and every other desk's own hidden paths; without duplicates.
  std::vector<std::filesystem::path> hidden_paths;
  /// The other desks named in `readable_desks`, and their folders (resolved), which the
  /// sandbox shows read-only (they are among sandbox.read_only_paths too). Their hidden
  /// paths stay hidden.
  std::vector<std::string> readable_desks;
  std::vector<std::filesystem::path> readable_desk_folders;
  /// Places outside the desk folder it may propose changes to (propose_file_change); resolved.
  std::vector<std::filesystem::path> proposable_paths;
  SandboxConfig sandbox;
  ModelConfig model;
  BudgetConfig budget;
  std::optional<std::filesystem::path> skills_folder;
  std::optional<std::filesystem::path> market_holidays;
  std::vector<desk::Schedule> schedules;
  /// The [[api]]s its 'apis' names, resolved: the desk's API gate needs nothing else. Their
  /// origins are among sandbox.allowed_hosts.
  std::vector<policy::ApiSpec> apis;

  bool operator==(const DeskConfig&) const = default;
};

struct Config {
  std::filesystem::path file;  ///< absolute
  RunnerConfig runner;
  /// Where [runner] state_folder was written; for the default, [runner]'s header or the file.
  ConfigPosition state_folder_position;
  ModelConfig model;
  BudgetConfig budget;
  SandboxConfig sandbox;
  std::vector<DeskConfig> desks;
  /// Every [[api]] (docs/API_GATE.md), whether a desk names it or not.
  std::vector<policy::ApiSpec> apis;
};

/// What loading found: the config when there was no problem, and every problem found.
struct ConfigLoad {
  std::optional<Config> config;
  std::vector<ConfigProblem> problems;
};

/// Whether `hidden` could be in the desk's sight. Under the minimal host view only the system
/// folders, the desk's folder, its read-only paths and the desk folders it may read are
/// there (and its proposable_paths, where deskd writes accepted proposals for it): a path
/// that neither lies in nor holds one of them needs no mask, so a thousand
/// desks in /srv/desks do not each mask the other 999. Under the full view, every path.
bool in_sight(const DeskConfig& desk, const std::filesystem::path& hidden);

/// Reads and checks the config at `file`, and that this process could create and write
/// its state folder (check_state_folder). Never throws.
ConfigLoad load_config(const std::filesystem::path& file);

/// Parses `text` as if read from `file` (relative paths start at file's folder); for tests.
/// Everything load_config checks but the state folder, so that a test's config may keep
/// the default /var/lib/deskd whoever runs it.
ConfigLoad parse_config(std::string_view text, const std::filesystem::path& file);

}  // namespace deskd::app
