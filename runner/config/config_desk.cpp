// The [[desk]] tables of the config and their [[desk.schedule]] entries. A desk starts from
// copies of [model] and [sandbox]; once every desk is read, the desk folders are judged
// together (config_world.cpp) and each desk's hidden paths are merged with the daemon's own
// paths (which only then are all known: every desk may name an API key file) and the other
// desks', and checked against the desk's folder and writable places.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <set>

#include "policy/confinement.h"
#include "runner/config/config_api.h"
#include "runner/config/config_reader.h"
#include "runner/config/config_world.h"
#include "runner/desk/market_status.h"
#include "runner/desk/subagent_board.h"
#include "runner/model/providers.h"

namespace deskd::app::config_detail {
namespace {

constexpr double kSecondsInADay = 86400;

void read_time(TableReader& reader, desk::Schedule& schedule) {
  const toml::node* node = reader.find("time");
  if (node == nullptr) {
    reader.missing("time");
    return;
  }
  if (const auto* text = node->as_string()) {
    if (auto fields = parse_time_of_day(text->get())) {
      schedule.hour = (*fields)[0];
      schedule.minute = (*fields)[1];
      schedule.second = (*fields)[2];
      return;
    }
    reader.problem(*node, "'time' must be HH:MM or HH:MM:SS (24-hour India time), not " + in_quotes(text->get()));
    return;
  }
  // An unquoted TOML time (09:05:00) is as good as the string.
  if (const auto* time = node->as_time(); time != nullptr && time->get().nanosecond == 0) {
    schedule.hour = time->get().hour;
    schedule.minute = time->get().minute;
    schedule.second = time->get().second;
    return;
  }
  reader.problem(*node, "'time' must be a string such as \"09:05\" (India time)");
}

void read_days(TableReader& reader, desk::Schedule& schedule) {
  auto days = reader.strings("days");
  if (!days) return;
  if (days->empty()) {
    reader.problem(*reader.find("days"), "'days' must name at least one day");
    return;
  }
  schedule.days.fill(false);
  for (const auto& [name, node] : *days) {
    if (auto day = parse_weekday(name)) {
      schedule.days[*day] = true;
    } else {
      reader.problem(*node, "unknown day " + in_quotes(name) + " in 'days' (mon, tue, ..., sun or monday, ..., sunday)");
    }
  }
}

void read_schedule(const toml::table& table, LoadContext& context, std::map<std::string, std::uint32_t>& names,
                   std::vector<desk::Schedule>& schedules) {
  TableReader reader(&table, "[[desk.schedule]]", context);
  desk::Schedule schedule;
  if (auto name = required_string(reader, "name")) {
    const std::uint32_t line = reader.where(*reader.find("name")).line;
    if (auto [first, inserted] = names.emplace(*name, line); !inserted) {
      reader.problem(*reader.find("name"), "schedule name " + in_quotes(*name) +
                                               " is used twice in this desk; the first is at line " +
                                               std::to_string(first->second));
    }
    schedule.name = std::move(*name);
  }
  read_time(reader, schedule);
  read_days(reader, schedule);
  if (auto market_days_only = reader.boolean("market_days_only")) schedule.market_days_only = *market_days_only;
  if (auto text = required_string(reader, "text")) schedule.text = std::move(*text);
  reader.report_unknown_keys();
  schedules.push_back(std::move(schedule));
}

void read_schedules(TableReader& reader, LoadContext& context, std::vector<desk::Schedule>& schedules) {
  const toml::node* node = reader.find("schedule");
  if (node == nullptr) return;
  const auto* array = node->as_array();
  if (array == nullptr || (!array->empty() && !array->is_array_of_tables())) {
    reader.problem(*node, "'schedule' must be an array of tables, each written [[desk.schedule]]");
    return;
  }
  std::map<std::string, std::uint32_t> names;
  for (const auto& element : *array) read_schedule(*element.as_table(), context, names, schedules);
}

void read_desk_paths(TableReader& reader, LoadContext& context, DeskDraft& draft) {
  if (reader.find("directory") == nullptr) {
    reader.missing("directory");
  } else if (auto directory = reader.path("directory", "the desk folder")) {
    draft.directory_position = directory->position;
    draft.directory_found = expect_existing(context, *directory, PathKind::folder, "the desk folder");
    draft.desk.directory = directory->path;
  }
  // Relative hidden paths start at the config file's folder, like every path in the file.
  draft.own_hidden = reader.paths("hidden_paths", "the hidden path");
  // Where, besides its own folder, the desk may propose changes (accepted with the owner's
  // rights): each must be an existing folder or file.
  for (const auto& place : reader.paths("proposable_paths", "the proposable path")) {
    if (expect_existing(context, place, PathKind::file_or_folder, "the proposable path")) draft.desk.proposable_paths.push_back(place.path);
  }
  if (auto skills = reader.path("skills", "the skills folder")) {
    if (expect_existing(context, *skills, PathKind::folder, "the skills folder")) draft.desk.skills_folder = skills->path;
  }
  if (auto holidays = reader.path("market_holidays", "the market holidays file")) {
    if (expect_existing(context, *holidays, PathKind::file, "the market holidays file")) {
      auto market = desk::MarketStatus::load(holidays->path);
      if (market.ok()) {
        draft.desk.market_holidays = holidays->path;
      } else {
        context.problems.add(holidays->position, market.error().what);
      }
    }
  }
}

// A hostname as the sandbox accepts it (sandbox::SandboxSpecBuilder::hostname).
bool is_hostname(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

void read_hostname(TableReader& reader, DeskConfig& desk) {
  // A desk name may hold '_', which a hostname may not.
  std::string chosen = desk.name;
  std::replace(chosen.begin(), chosen.end(), '_', '-');
  desk.sandbox.hostname = chosen;
  auto hostname = reader.string("hostname");
  if (!hostname) return;
  if (is_hostname(*hostname)) {
    desk.sandbox.hostname = std::move(*hostname);
  } else {
    reader.problem(*reader.find("hostname"),
                   "'hostname' must be 1 to 64 letters, digits, '-' or '.', not " + in_quotes(*hostname));
  }
}

void read_readable_desks(TableReader& reader, DeskDraft& draft) {
  auto names = reader.strings("readable_desks");
  if (!names) return;
  for (auto& [name, node] : *names) draft.readable_desks.emplace_back(std::move(name), reader.where(*node));
}

DeskDraft read_desk(const toml::table& table, const Config& config, const SandboxPlaces& global,
                    const BudgetPlaces& global_budget, ConfigPosition model_position,
                    std::map<std::string, std::uint32_t>& desk_names, LoadContext& context) {
  TableReader reader(&table, "[[desk]]", context);
  DeskDraft draft;
  DeskConfig& desk = draft.desk;
  desk.position = reader.position();
  desk.sandbox = config.sandbox;
  desk.model = config.model;
  desk.budget = config.budget;
  draft.budget_places = global_budget;

  if (auto name = required_string(reader, "name")) {
    const toml::node& node = *reader.find("name");
    if (!is_desk_name(*name)) {
      reader.problem(node, "desk name " + in_quotes(*name) + " must be 1 to 64 letters, digits, '_' or '-'");
    } else if (auto [first, inserted] = desk_names.emplace(*name, reader.where(node).line); !inserted) {
      reader.problem(node, "desk name " + in_quotes(*name) + " is used twice; the first is at line " +
                               std::to_string(first->second));
    }
    desk.name = std::move(*name);
  }
  read_desk_paths(reader, context, draft);
  read_hostname(reader, desk);
  read_readable_desks(reader, draft);
  read_desk_apis(reader, draft);
  if (auto mode = reader.choice("mode", {"dry_run", "live"})) desk.mode = *mode;
  if (auto seconds = reader.number("timeout_seconds", {0, true, kSecondsInADay})) desk.timeout_seconds = *seconds;
  if (auto characters = reader.whole("maximum_output_characters", 1, std::int64_t{1} << 26)) {
    desk.maximum_output_characters = static_cast<std::size_t>(*characters);
  }
  if (auto minutes = reader.number("idle_terminal_minutes", {0, false, 7 * kSecondsInADay / 60})) {
    desk.idle_terminal = std::chrono::milliseconds(std::llround(*minutes * 60000));
  }
  if (auto seconds = reader.number("stall_timeout_seconds", {0, true, 7 * kSecondsInADay})) {
    desk.stall_timeout = std::chrono::milliseconds(std::llround(*seconds * 1000));
  }
  if (auto subagents =
          reader.whole("maximum_subagents", 0, static_cast<std::int64_t>(desk::SubagentBoard::kMaximumLimit))) {
    desk.maximum_subagents = static_cast<std::size_t>(*subagents);
  }
  if (auto minutes = reader.whole("catch_up_minutes", 0, 7 * 24 * 60)) {
    desk.catch_up_window = std::chrono::minutes(*minutes);
  }

  TableReader sandbox_reader(reader.table("sandbox"), "[desk.sandbox]", context);
  SandboxPlaces places{draft.own_hidden, global.read_only, global.disk_quota, global.allowed_hosts};
  read_sandbox(sandbox_reader, desk.sandbox, places, context);
  sandbox_reader.report_unknown_keys();
  draft.own_hidden = places.hidden;
  draft.read_only = std::move(places.read_only);
  draft.disk_quota_position = places.disk_quota;
  draft.allowed_hosts_position = places.allowed_hosts;
  draft.hidden = std::move(places.hidden);
  draft.hidden.insert(draft.hidden.end(), global.hidden.begin(), global.hidden.end());

  const toml::table* model_table = reader.table("model");
  TableReader model_reader(model_table, "[desk.model]", context);
  read_model(model_reader, desk.model, context);
  model_reader.report_unknown_keys();
  draft.model_position = model_table != nullptr ? model_reader.position() : model_position;
  if (draft.model_position.line == 0) draft.model_position = desk.position;

  TableReader budget_reader(reader.table("budget"), "[desk.budget]", context);
  read_budget(budget_reader, desk.budget, draft.budget_places);
  budget_reader.report_unknown_keys();

  read_schedules(reader, context, desk.schedules);
  reader.report_unknown_keys();
  return draft;
}

// "provider 'anthropic'", or "provider 'a' or 'b'": the rows of the provider table with
// extended thinking.
std::string providers_with_thinking() {
  std::string names;
  for (const model::ProviderKind& kind : model::provider_kinds()) {
    if (kind.extended_thinking) names += (names.empty() ? "" : " or ") + in_quotes(kind.name);
  }
  return "provider " + names;
}

// What can only be judged once [desk.model] has been laid over [model].
void check_model(const ModelConfig& model, const ConfigPosition& position, ProblemList& problems) {
  // read_model took only the table's names; the default is one of them.
  const model::ProviderKind* kind = model::find_provider_kind(model.provider);
  if (kind == nullptr) return;
  if (model.thinking_budget_tokens) {
    // The Messages API's rules for extended thinking (docs: "Building with extended
    // thinking"): the budget is part of max_tokens and must leave room for the answer;
    // temperature cannot be changed while thinking.
    if (!kind->extended_thinking) {
      problems.add(position, "'thinking' is extended thinking of " + providers_with_thinking() + "; provider " +
                                 in_quotes(model.provider) + " has none (thinking = false turns it off)");
    } else if (*model.thinking_budget_tokens >= model.max_tokens) {
      problems.add(position, "'thinking' budget_tokens (" + std::to_string(*model.thinking_budget_tokens) +
                                 ") must be below max_tokens (" + std::to_string(model.max_tokens) +
                                 "): the thinking is part of the reply's tokens");
    }
    if (model.temperature) {
      problems.add(position, "'temperature' cannot be set together with 'thinking': the API refuses to change the "
                             "temperature of extended thinking");
    }
  }
  if (model.api == "responses" && !kind->responses_api) {
    problems.add(position, "'api = \"responses\"' (OpenAI's Responses API) was laid over provider " +
                               in_quotes(model.provider) + ", which has one API; write api = \"chat_completions\"");
  }
  if (kind->needs_model && model.model.empty()) {
    problems.add(position, "provider " + in_quotes(model.provider) + " needs a 'model'");
  }
  if (model::needs_api_key(*kind, model.base_url) && !model.api_key_file && model.api_key_variable.empty()) {
    problems.add(position, "provider " + in_quotes(model.provider) + " needs 'api_key_file' or 'api_key_variable'");
  }
}

// A quota is a file system image per desk, which only a root deskd can mount. Fail closed:
// a desk that would go without its quota is refused, unless the config says "none".
void check_disk_quota(const DeskDraft& draft, ProblemList& problems) {
  if (!draft.desk.sandbox.disk_quota_bytes || ::geteuid() == 0) return;
  const std::string megabytes = std::to_string(*draft.desk.sandbox.disk_quota_bytes >> 20);
  if (draft.disk_quota_position) {
    problems.add(*draft.disk_quota_position,
                 "a disk quota needs deskd to run as root: it mounts a file system image for each desk's writable "
                 "places; write disk_quota_mb = \"none\" to accept desks that can fill their file system");
    return;
  }
  problems.add(draft.desk.position, "desk " + in_quotes(draft.desk.name) + " gets a disk quota of " + megabytes +
                                        " MiB by default, which only a root deskd can give (it mounts a file system "
                                        "image for each desk's writable places); run deskd as root, or write "
                                        "disk_quota_mb = \"none\" in [sandbox] or [desk.sandbox] to accept desks that "
                                        "can fill their file system");
}

}  // namespace

void read_desks(const toml::node& node, const SandboxPlaces& global, const BudgetPlaces& global_budget,
                ConfigPosition model_position, std::span<const ApiDraft> apis, Config& config, LoadContext& context) {
  const auto* array = node.as_array();
  if (array == nullptr || (!array->empty() && !array->is_array_of_tables())) {
    context.problems.add(context.where(node.source()), "'desk' must be an array of tables, each written [[desk]]");
    return;
  }
  if (array->empty()) {
    context.problems.add(context.where(node.source()), "no desk: deskd needs at least one [[desk]]");
    return;
  }
  std::map<std::string, std::uint32_t> desk_names;
  std::vector<DeskDraft> drafts;
  for (const auto& element : *array) {
    drafts.push_back(
        read_desk(*element.as_table(), config, global, global_budget, model_position, desk_names, context));
  }
  give_desks_their_apis(drafts, apis, context.problems);

  // An API key never enters a sandbox, whichever desk's key it is.
  std::set<std::string> key_variables;
  for (const auto& draft : drafts) {
    const model::ProviderKind* kind = model::find_provider_kind(draft.desk.model.provider);
    if (kind != nullptr && kind->needs_key != model::KeyNeed::never && !draft.desk.model.api_key_variable.empty()) {
      key_variables.insert(draft.desk.model.api_key_variable);
    }
  }
  for (auto& draft : drafts) {
    check_model(draft.desk.model, draft.model_position, context.problems);
    check_budget(draft.desk, draft.budget_places, context.problems);
    check_disk_quota(draft, context.problems);
    for (const auto& name : draft.desk.sandbox.environment_variables) {
      if (key_variables.contains(name)) {
        context.problems.add(draft.desk.position, "desk " + in_quotes(draft.desk.name) + " would pass " +
                                                      in_quotes(name) +
                                                      ", an API key variable, into its sandbox ('environment'); an "
                                                      "API key never enters a sandbox");
      }
    }
    // Only now is every API key file known: each is hidden from every desk.
    if (draft.directory_found) {
      draft.hidden.insert(draft.hidden.end(), context.daemon_paths.begin(), context.daemon_paths.end());
    }
  }
  check_allowed_hosts(drafts, global.allowed_hosts, context.problems);
  check_desk_folders(drafts, context.daemon_paths, context.problems);
  meet_other_desks(drafts, context.problems);
  for (auto& draft : drafts) {
    if (draft.directory_found) {
      draft.desk.hidden_paths =
          merge_hidden_paths(draft.desk, draft.directory_position, draft.hidden, context.problems);
      check_shown_paths(draft, context.problems);
      // Without hidden paths this checks what remains: no writable place is a symbolic link.
      auto confinement = policy::Confinement::create(draft.desk.directory, {});
      if (!confinement.ok() && confinement.error().error_number != EACCES) {
        context.problems.add(draft.directory_position, confinement.error().what);
      }
    }
    config.desks.push_back(std::move(draft.desk));
  }
}

}  // namespace deskd::app::config_detail
