// The config loader: parses the TOML once, then reads [runner] and [model] here, [sandbox]
// in config_sandbox.cpp and the [[desk]] tables in config_desk.cpp. Every reader reports
// what is wrong and goes on, so one `deskd check` lists every problem.

#include "runner/config/config.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/unique_fd.h"
#include "policy/egress_allowlist.h"
#include "runner/config/config_api.h"
#include "runner/config/config_confinement.h"
#include "runner/config/config_reader.h"
#include "runner/config/config_values.h"
#include "runner/config/config_web.h"
#include "runner/config/state_folder_check.h"
#include "runner/model/providers.h"
#include "runner/model/script_provider.h"
#include "sandbox/sandbox_keys.h"
#include "sandbox/uid_registry.h"

namespace deskd::app {
namespace {

using config_detail::LoadContext;
using config_detail::NumberRange;
using config_detail::PathKind;
using config_detail::PlacedPath;
using config_detail::TableReader;
using config_detail::kMaximumSocketPathBytes;

constexpr std::size_t kMaximumConfigBytes = std::size_t{1} << 20;
constexpr double kSecondsInADay = 86400;

std::chrono::milliseconds milliseconds_from_seconds(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

// A default path of the daemon's that the file did not set: resolved like a written one.
PlacedPath default_path(const std::filesystem::path& path, ConfigPosition position, std::string label,
                        const LoadContext& context) {
  auto resolved = config_detail::resolve_config_path(path.native(), context.folder);
  return PlacedPath{resolved.ok() ? std::move(resolved).value() : path, std::move(position), std::move(label)};
}

// (uid_t)-1 means "no change" to chown() and friends; it is nobody's id.
constexpr std::int64_t kHighestUserId = 4294967294;
// What the kernel shows for an id a user namespace does not map: never a desk's.
constexpr std::int64_t kOverflowUserId = 65534;

// Reads desk_uid_first and desk_uid_count and checks the range they make; returns where the
// range was written, for the check against the number of desks.
ConfigPosition read_desk_uid_range(TableReader& reader, RunnerConfig& runner, LoadContext& context) {
  const auto first = reader.whole("desk_uid_first", 1, kHighestUserId);
  const auto count = reader.whole("desk_uid_count", 1, kHighestUserId);
  if (first) runner.desk_uid_first = static_cast<std::uint32_t>(*first);
  if (count) runner.desk_uid_count = static_cast<std::uint32_t>(*count);
  const toml::node* first_node = reader.find("desk_uid_first");
  const toml::node* count_node = reader.find("desk_uid_count");
  ConfigPosition position = count_node != nullptr   ? reader.where(*count_node)
                            : first_node != nullptr ? reader.where(*first_node)
                                                    : reader.position();
  if (position.file.empty()) position = context.problems.at(0, 0);
  if ((first_node != nullptr && !first) || (count_node != nullptr && !count)) return position;  // reported

  const std::int64_t lowest = runner.desk_uid_first;
  const std::int64_t highest = lowest + runner.desk_uid_count - 1;
  const std::string range = "the desk uid range " + std::to_string(lowest) + "..." + std::to_string(highest) +
                            " ('desk_uid_first', 'desk_uid_count')";
  if (highest > kHighestUserId) {
    context.problems.add(position, range + " goes past 4294967294, the highest user id; lower 'desk_uid_first' or "
                                           "'desk_uid_count'");
  } else if (lowest <= kOverflowUserId && kOverflowUserId <= highest) {
    context.problems.add(position, range + " holds 65534, the id the kernel shows for unmapped users ('nobody'); "
                                           "start the range past it (the default start is 1879048192)");
  } else if (lowest <= sandbox::kAdHocDeskUid && sandbox::kAdHocDeskUid <= highest) {
    context.problems.add(position, range + " holds " + std::to_string(sandbox::kAdHocDeskUid) +
                                       ", the uid of the ad-hoc commands (deskd sandbox, shell, mcp, run); end the "
                                       "range below it");
  }
  return position;
}

void check_desk_uid_count(const Config& config, const ConfigPosition& position, LoadContext& context) {
  if (config.desks.size() <= config.runner.desk_uid_count) return;
  context.problems.add(position, "'desk_uid_count' is " + std::to_string(config.runner.desk_uid_count) +
                                     ", fewer than the " + std::to_string(config.desks.size()) +
                                     " desks of this config; every desk needs a uid of its own");
}

template <auto field>
bool runner_field_differs(const RunnerConfig& now, const RunnerConfig& next) {
  return now.*field != next.*field;
}

// Each [runner] key, in the order read_runner reads it. Every one is taken once, at start:
// the socket is bound with its path, group and peers, the state folder's journals are in use,
// the log, the shutdown and the control server are set up with their values, the desks hold
// their uids and the user namespace was checked.
constexpr RunnerKey kRunnerKeys[] = {
    {"state_folder", true, runner_field_differs<&RunnerConfig::state_folder>},
    {"socket", true, runner_field_differs<&RunnerConfig::socket_path>},
    {"socket_group", true, runner_field_differs<&RunnerConfig::socket_group>},
    {"allowed_uids", true, runner_field_differs<&RunnerConfig::allowed_uids>},
    {"allowed_groups", true, runner_field_differs<&RunnerConfig::allowed_groups>},
    {"log_level", true, runner_field_differs<&RunnerConfig::log_level>},
    {"shutdown_grace_seconds", true, runner_field_differs<&RunnerConfig::shutdown_grace>},
    {"client_buffer_mb", true, runner_field_differs<&RunnerConfig::client_buffer_mb>},
    {"max_clients", true, runner_field_differs<&RunnerConfig::max_clients>},
    {"require_user_namespace", true, runner_field_differs<&RunnerConfig::require_user_namespace>},
    // The web page's listeners are bound once, at start, with their certificate.
    // As written: a changed socket moves the default web socket, and that is the socket's row.
    {"web_socket", true, runner_field_differs<&RunnerConfig::web_socket>},
    // The TCP listener and its certificate, read and checked as one.
    {"web_listen/web_tls_cert/web_tls_key", true,
     [](const RunnerConfig& now, const RunnerConfig& next) {
       return now.web_listen_host != next.web_listen_host || now.web_listen_port != next.web_listen_port ||
              now.web_tls_cert != next.web_tls_cert || now.web_tls_key != next.web_tls_key;
     }},
    {"desk_uid_first/desk_uid_count", true,
     [](const RunnerConfig& now, const RunnerConfig& next) {
       return now.desk_uid_first != next.desk_uid_first || now.desk_uid_count != next.desk_uid_count;
     }},
};

ConfigPosition read_runner(const toml::table* table, Config& config, LoadContext& context) {
  RunnerConfig& runner = config.runner;
  TableReader reader(table, "[runner]", context);
  auto state = reader.path("state_folder", "deskd's state folder");
  if (!state) state = default_path(runner.state_folder, reader.position(), "deskd's state folder", context);
  state->state_folder = true;
  runner.state_folder = state->path;
  config.state_folder_position = state->position.file.empty() ? context.problems.at(0, 0) : state->position;
  context.daemon_paths.push_back(*state);

  auto socket = reader.path("socket", "deskd's socket");
  if (!socket) socket = default_path(runner.socket_path, reader.position(), "deskd's socket", context);
  if (socket->path.native().size() > kMaximumSocketPathBytes) {
    context.problems.add(socket->position, "the socket path " + socket->path.native() + " is " +
                                               std::to_string(socket->path.native().size()) +
                                               " bytes long; a Unix socket path may be at most " +
                                               std::to_string(kMaximumSocketPathBytes));
  }
  socket->socket = true;
  runner.socket_path = socket->path;
  context.daemon_paths.push_back(*socket);

  if (auto group = reader.string("socket_group")) {
    if (group->empty()) {
      reader.problem(*reader.find("socket_group"), "'socket_group' must not be empty");
    } else {
      runner.socket_group = std::move(*group);
    }
  }
  if (const toml::node* node = reader.find("allowed_uids")) {
    const auto* array = node->as_array();
    if (array == nullptr) reader.problem(*node, "'allowed_uids' must be an array of user ids");
    for (std::size_t index = 0; array != nullptr && index < array->size(); ++index) {
      const auto* uid = (*array)[index].as_integer();
      if (uid == nullptr || uid->get() < 0 || uid->get() > kHighestUserId) {
        reader.problem((*array)[index], "'allowed_uids' must hold user ids (whole numbers from 0 to 4294967294)");
      } else {
        runner.allowed_uids.push_back(static_cast<std::uint32_t>(uid->get()));
      }
    }
  }
  if (auto groups = reader.strings("allowed_groups")) {
    for (auto& [group, node] : *groups) {
      if (group.empty()) {
        reader.problem(*node, "'allowed_groups' must not hold an empty group name");
      } else {
        runner.allowed_groups.push_back(std::move(group));
      }
    }
  }
  if (auto level = reader.choice("log_level", {"trace", "debug", "info", "warn", "error"})) {
    runner.log_level = std::move(*level);
  }
  if (auto grace = reader.number("shutdown_grace_seconds", {0, false, 3600})) {
    runner.shutdown_grace = milliseconds_from_seconds(*grace);
  }
  if (auto megabytes = reader.whole("client_buffer_mb", 1, 1024)) runner.client_buffer_mb = static_cast<std::uint32_t>(*megabytes);
  if (auto clients = reader.whole("max_clients", 1, 65536)) runner.max_clients = static_cast<std::uint32_t>(*clients);
  if (auto required = reader.boolean("require_user_namespace")) runner.require_user_namespace = *required;
  config_detail::read_runner_web(reader, runner, context);
  ConfigPosition desk_uid_count_position = read_desk_uid_range(reader, runner, context);
  reader.report_unknown_keys();
  return desk_uid_count_position;
}

void read_prices(const toml::table& prices, const std::string& title, std::map<std::string, ModelPrice>& table,
                 LoadContext& context) {
  for (const auto& [name, node] : prices) {
    const std::string price_title = title + ".\"" + std::string(name.str()) + "\"]";
    const auto* entry = node.as_table();
    if (entry == nullptr) {
      context.problems.add(context.where(node.source()), price_title + " must be a table of prices");
      continue;
    }
    TableReader reader(entry, price_title, context);
    ModelPrice price = table[std::string(name.str())];
    const NumberRange range{0, false, 1e6};
    if (auto value = reader.number("input", range)) price.input = *value;
    if (auto value = reader.number("output", range)) price.output = *value;
    if (auto value = reader.number("cache_read", range)) price.cache_read = *value;
    if (auto value = reader.number("cache_write", range)) price.cache_write = *value;
    table[std::string(name.str())] = price;
    reader.report_unknown_keys();
  }
}

void read_sandbox_table(const toml::table* table, SandboxConfig& sandbox, config_detail::SandboxPlaces& places,
                        LoadContext& context) {
  TableReader reader(table, "[sandbox]", context);
  config_detail::read_sandbox(reader, sandbox, places, context);
  reader.report_unknown_keys();
}

std::optional<std::string> read_file(const std::filesystem::path& file, std::string& failure) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    failure = std::string("cannot be opened: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0) {
      failure = std::string("cannot be read: ") + std::strerror(errno);
      return std::nullopt;
    }
    if (count == 0) return text;
    text.append(buffer, static_cast<std::size_t>(count));
    if (text.size() > kMaximumConfigBytes) {
      failure = "is over 1 MiB; it is not a deskd config";
      return std::nullopt;
    }
  }
}

}  // namespace

std::span<const RunnerKey> runner_keys() { return kRunnerKeys; }

namespace config_detail {

void read_model(TableReader& reader, ModelConfig& model, LoadContext& context) {
  if (auto provider = reader.choice("provider", model::provider_names())) model.provider = *provider;
  if (auto script = reader.path("script", "the script")) {
    if (expect_existing(context, *script, PathKind::file, "the script file")) {
      // A malformed script would otherwise only show when a desk's first turn starts.
      if (auto parsed = model::ScriptProvider::load(script->path); !parsed.ok()) {
        context.problems.add(script->position, parsed.error().what);
      }
      model.script = script->path;
    }
  }
  if (auto name = reader.string("model")) model.model = *name;
  if (auto url = reader.string("base_url")) {
    if (!url->empty() && !url->starts_with("https://") && !url->starts_with("http://")) {
      reader.problem(*reader.find("base_url"), "'base_url' must start with https:// or http://");
    } else {
      model.base_url = *url;
    }
  }
  if (auto key_file = reader.path("api_key_file", "the API key file")) {
    expect_existing(context, *key_file, PathKind::file, "the API key file");
    model.api_key_file = key_file->path;
    context.daemon_paths.push_back(*key_file);
  }
  if (auto variable = reader.string("api_key_variable")) {
    if (!variable->empty() && !sandbox::is_variable_name(*variable)) {
      reader.problem(*reader.find("api_key_variable"),
                     "'api_key_variable' must be an environment variable name, not " + in_quotes(*variable));
    } else {
      model.api_key_variable = *variable;
    }
  }
  if (auto ca_file = reader.path("ca_file", "the CA file")) {
    if (expect_existing(context, *ca_file, PathKind::file, "the CA file")) model.ca_file = ca_file->path;
  }
  if (auto tokens = reader.whole("max_tokens", 1, 10'000'000)) model.max_tokens = static_cast<std::uint32_t>(*tokens);
  if (auto field = reader.choice("max_tokens_field", {"max_completion_tokens", "max_tokens"})) model.max_tokens_field = *field;
  if (auto api = reader.choice("api", {"chat_completions", "responses"})) {
    // The provider is known here when this table or the one it lays over named it; a
    // desk's table that changes only the provider is judged by check_model.
    const model::ProviderKind* kind = model::find_provider_kind(model.provider);
    if (*api == "responses" && kind != nullptr && !kind->responses_api) {
      std::string speakers;
      for (const model::ProviderKind& row : model::provider_kinds()) {
        if (row.responses_api) speakers += (speakers.empty() ? "" : " or ") + in_quotes(row.name);
      }
      reader.problem(*reader.find("api"), "'api = \"responses\"' is OpenAI's Responses API, spoken by provider " +
                                              speakers + "; provider " + in_quotes(model.provider) + " has one API");
      model.api = "chat_completions";  // told once, here, not again where the desk is judged
    } else {
      model.api = *api;
    }
  }
  if (auto encrypted = reader.boolean("encrypted_reasoning")) model.encrypted_reasoning = *encrypted;
  // thinking = false: none, for a desk whose [model] thinks but whose own model cannot.
  const toml::node* thinking_node = reader.find("thinking");
  if (thinking_node != nullptr && thinking_node->is_boolean()) {
    if (thinking_node->value_or(true)) {
      reader.problem(*thinking_node, "'thinking' must be a table such as { budget_tokens = 4096 }, or false");
    } else {
      model.thinking_budget_tokens.reset();
    }
  } else if (const auto* thinking = reader.table("thinking")) {
    // thinking = { budget_tokens = N }: the Messages API refuses a budget under 1024.
    TableReader thinking_reader(thinking, reader.title().substr(0, reader.title().size() - 1) + ".thinking]", context);
    if (auto budget = thinking_reader.whole("budget_tokens", 1024, 10'000'000)) {
      model.thinking_budget_tokens = static_cast<std::uint32_t>(*budget);
    } else if (thinking_reader.find("budget_tokens") == nullptr) {
      thinking_reader.problem(*reader.find("thinking"), "'thinking' needs a 'budget_tokens' (at least 1024, below max_tokens)");
    }
    thinking_reader.report_unknown_keys();
  }
  if (auto go_on = reader.boolean("continue_after_max_tokens")) model.continue_after_max_tokens = *go_on;
  if (auto temperature = reader.number("temperature", {0, false, 2})) model.temperature = *temperature;
  if (auto seconds = reader.number("connect_timeout_seconds", {0, true, 3600})) {
    model.connect_timeout = milliseconds_from_seconds(*seconds);
  }
  if (auto seconds = reader.number("idle_timeout_seconds", {0, true, kSecondsInADay})) {
    model.idle_timeout = milliseconds_from_seconds(*seconds);
  }
  if (auto seconds = reader.number("call_timeout_seconds", {0, true, kSecondsInADay})) {
    model.call_timeout = milliseconds_from_seconds(*seconds);
  }
  if (auto retries = reader.whole("max_retries", 0, 100)) model.max_retries = static_cast<std::uint32_t>(*retries);
  if (auto window = reader.whole("context_window", 1, 100'000'000)) {
    model.context_window = static_cast<std::uint32_t>(*window);
  }
  if (auto share = reader.number("compaction_share", {0, true, 1})) model.compaction_share = *share;
  if (const auto* prices = reader.table("prices")) {
    read_prices(*prices, reader.title().substr(0, reader.title().size() - 1) + ".prices", model.prices, context);
  }
}

}  // namespace config_detail

ConfigLoad parse_config(std::string_view text, const std::filesystem::path& file) {
  std::error_code error;
  auto absolute_file = std::filesystem::absolute(file, error).lexically_normal();
  if (error) absolute_file = file;
  LoadContext context{config_detail::ProblemList(file), absolute_file.parent_path(), {}};

  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& failure) {
    context.problems.add(context.where(failure.source()), std::string(failure.description()));
    return ConfigLoad{std::nullopt, context.problems.take()};
  }

  Config config;
  config.file = absolute_file;
  TableReader reader(&root, "", context);
  const ConfigPosition desk_uid_count_position = read_runner(reader.table("runner"), config, context);

  const toml::table* model_table = reader.table("model");
  TableReader model_reader(model_table, "[model]", context);
  config_detail::read_model(model_reader, config.model, context);
  model_reader.report_unknown_keys();

  config_detail::SandboxPlaces global_places;
  read_sandbox_table(reader.table("sandbox"), config.sandbox, global_places, context);

  config_detail::BudgetPlaces global_budget;
  TableReader budget_reader(reader.table("budget"), "[budget]", context);
  config_detail::read_budget(budget_reader, config.budget, global_budget);
  budget_reader.report_unknown_keys();

  // Before the desks: every credential's key file is one of the daemon's paths, hidden from
  // each desk, and the desks name the APIs.
  std::vector<config_detail::ApiDraft> apis;
  if (const toml::node* node = reader.find("api")) apis = config_detail::read_apis(*node, context);
  for (const auto& api : apis) config.apis.push_back(api.spec);

  if (const toml::node* desks = reader.find("desk")) {
    config_detail::read_desks(*desks, global_places, global_budget, model_reader.position(), apis, config, context);
    check_desk_uid_count(config, desk_uid_count_position, context);
  } else {
    context.problems.add(context.problems.at(0, 0), "no [[desk]] table: deskd needs at least one desk");
  }
  reader.report_unknown_keys();

  ConfigLoad load;
  load.problems = context.problems.take();
  if (load.problems.empty()) load.config = std::move(config);
  return load;
}

ConfigLoad load_config(const std::filesystem::path& file) {
  std::string failure;
  auto text = read_file(file, failure);
  if (!text) return ConfigLoad{std::nullopt, {ConfigProblem{ConfigPosition{file, 0, 0}, "the config " + failure}}};
  ConfigLoad load = parse_config(*text, file);
  // Judged here, not in parse_config: it depends on who runs deskd, not on the file.
  if (load.config) {
    if (auto usable = check_state_folder(load.config->runner.state_folder); !usable.ok()) {
      load.problems.push_back(ConfigProblem{load.config->state_folder_position, usable.error().what});
      load.config.reset();
    }
  }
  return load;
}

}  // namespace deskd::app
