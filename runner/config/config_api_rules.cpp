// One [[api.rule]]: methods, path, action, and its bounds — rate, window, body checks
// (config_api.h). Each grammar's mistake is reported at the value that holds it.

#include <algorithm>
#include <charconv>

#include "runner/config/config_api.h"

namespace deskd::app::config_detail {
namespace {

constexpr std::uint32_t kMostRequestsPerRate = 1'000'000;  // a sliding rate keeps one time per request

std::optional<policy::ApiRate> parse_rate(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view digits = text.substr(0, slash);
  const std::string_view per = text.substr(slash + 1);
  std::uint32_t count = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || count == 0 ||
      count > kMostRequestsPerRate) {
    return std::nullopt;
  }
  policy::ApiRate rate{count, policy::ApiRate::Per::second, std::string(text)};
  if (per == "minute") {
    rate.per = policy::ApiRate::Per::minute;
  } else if (per == "day") {
    rate.per = policy::ApiRate::Per::day;
  } else if (per != "second") {
    return std::nullopt;
  }
  return rate;
}

// "HH:MM" in minutes since midnight.
std::optional<int> minute_of_day(std::string_view text) {
  if (std::count(text.begin(), text.end(), ':') != 1) return std::nullopt;
  auto fields = parse_time_of_day(text);
  if (!fields) return std::nullopt;
  return (*fields)[0] * 60 + (*fields)[1];
}

// "09:00-15:30", start before end.
std::optional<std::pair<int, int>> parse_range(std::string_view text) {
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto start = minute_of_day(text.substr(0, dash));
  const auto end = minute_of_day(text.substr(dash + 1));
  if (!start || !end || *start >= *end) return std::nullopt;
  return std::pair{*start, *end};
}

void read_window(TableReader& reader, policy::ApiRule& rule) {
  const toml::node* node = reader.find("window");
  const std::string expected =
      "'window' must be \"nse_session\" or a list of India-time ranges such as [\"09:00-15:30\"], each start before "
      "its end";
  if (node != nullptr) {
    if (const auto* name = node->as_string()) {
      if (name->get() == "nse_session") {
        rule.window =
            policy::ApiTimeWindow{.nse_session = true, .ranges = {}, .market_days_only = false, .text = "nse_session"};
      } else {
        reader.problem(*node, expected + ", not " + in_quotes(name->get()));
      }
    } else if (auto ranges = reader.strings("window")) {
      policy::ApiTimeWindow window;
      for (const auto& [text, element] : *ranges) {
        if (auto range = parse_range(text)) {
          window.ranges.push_back(*range);
          window.text += (window.text.empty() ? "" : ", ") + text;
        } else {
          reader.problem(*element, expected + ", not " + in_quotes(text));
        }
      }
      if (ranges->empty()) reader.problem(*node, expected + "; the list is empty");
      if (!window.ranges.empty()) rule.window = std::move(window);
    }
  }
  if (auto market_days_only = reader.boolean("market_days_only")) {
    const toml::node& flag = *reader.find("market_days_only");
    const std::string what = "'market_days_only' holds explicit 'window' ranges to NSE trading days; this rule has ";
    if (node == nullptr) {
      reader.problem(flag, what + "no 'window'");
    } else if (rule.window && rule.window->nse_session) {
      reader.problem(flag, what + "window = \"nse_session\", which keeps to trading days already");
    } else if (rule.window) {
      rule.window->market_days_only = *market_days_only;
    }
  }
}

}  // namespace

policy::ApiRule read_api_rule(const toml::table& table, std::size_t number, LoadContext& context) {
  TableReader reader(&table, "[[api.rule]]", context);
  policy::ApiRule rule;
  rule.name = "rule " + std::to_string(number);
  if (auto name = reader.string("name")) {
    if (name->empty()) {
      reader.problem(*reader.find("name"), "'name' must not be empty");
    } else {
      rule.name = std::move(*name);
    }
  }
  if (auto methods = reader.strings("methods")) {
    for (auto& [method, node] : *methods) {
      const bool token = !method.empty() && std::all_of(method.begin(), method.end(), [](char c) {
        return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
      });
      if (!token) {
        reader.problem(*node, "'methods' must hold HTTP methods such as \"GET\", not " + in_quotes(method));
        continue;
      }
      std::transform(method.begin(), method.end(), method.begin(),
                     [](char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); });
      rule.methods.push_back(std::move(method));
    }
  }
  if (auto path = reader.string("path")) {
    if (auto checked = policy::check_api_path_pattern(*path); !checked.ok()) {
      reader.problem(*reader.find("path"), checked.error().what);
    }
    rule.path = std::move(*path);
  }
  bool written_deny = false;
  if (reader.find("action") == nullptr) {
    context.problems.add(reader.position(), "[[api.rule]] needs an 'action': allow, deny or ask");
  } else if (auto action = reader.choice("action", {"allow", "deny", "ask"})) {
    rule.action = *action == "allow" ? policy::ApiAction::allow
                  : *action == "ask" ? policy::ApiAction::ask
                                     : policy::ApiAction::deny;
    written_deny = rule.action == policy::ApiAction::deny;
  }
  if (auto rate = reader.string("rate")) {
    if (auto parsed = parse_rate(*rate)) {
      rule.rate = std::move(*parsed);
    } else {
      reader.problem(*reader.find("rate"),
                     "'rate' must be N/second, N/minute or N/day with N from 1 to 1000000, not " + in_quotes(*rate));
    }
  }
  read_window(reader, rule);
  if (auto checks = reader.strings("checks")) {
    for (const auto& [text, element] : *checks) {
      auto check = policy::parse_body_check(text);
      if (check.ok()) {
        rule.checks.push_back(std::move(check).value());
      } else {
        reader.problem(*element, check.error().what);
      }
    }
  }
  // A deny refuses before any bound is looked at: bounds there would be believed and never hold.
  if (written_deny && (rule.rate || rule.window || !rule.checks.empty())) {
    reader.problem(*reader.find("action"),
                   "a rule whose action is \"deny\" refuses every request it matches; its 'rate', 'window' and "
                   "'checks' would never be looked at, so remove them or make the action \"allow\" or \"ask\"");
  }
  reader.report_unknown_keys();
  return rule;
}

}  // namespace deskd::app::config_detail
