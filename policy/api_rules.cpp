// The rule book of an API (policy/api_rules.h): body checks as written, and the decision on
// one request — its rule, then the rule's window, checks and rate, in that order, so that a
// request refused for any reason does not count against the rate.

#include "policy/api_rules.h"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>

#include "base/ascii_text.h"
#include "policy/api_body.h"

namespace deskd::policy {
namespace {

// NSE's regular session: 09:15 to 15:30 India time, on a trading day.
constexpr int kSessionOpens = 9 * 60 + 15;
constexpr int kSessionCloses = 15 * 60 + 30;

Error bad_check(std::string_view text, const std::string& why) {
  return Error::make(ErrorCode::invalid_argument, "the check '" + std::string(text) + "' " + why);
}

bool is_field_character(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; }

void skip_blanks(std::string_view text, std::size_t& at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
}

// A dotted field path at `at` ("order.quantity"); empty when there is none.
std::vector<std::string> read_field(std::string_view text, std::size_t& at) {
  std::vector<std::string> path;
  for (;;) {
    const std::size_t start = at;
    while (at < text.size() && is_field_character(text[at])) ++at;
    if (at == start) return {};
    path.emplace_back(text.substr(start, at - start));
    if (at >= text.size() || text[at] != '.') return path;
    ++at;
  }
}

bool method_matches(const std::vector<std::string>& methods, std::string_view method) {
  if (methods.empty()) return true;
  const std::string wanted = uppercase(method);
  return std::any_of(methods.begin(), methods.end(), [&](const std::string& one) { return uppercase(one) == wanted; });
}

bool within_window(const ApiTimeWindow& window, const ApiMoment& moment) {
  if (window.nse_session) {
    return moment.trading_day && moment.india_minute_of_day >= kSessionOpens &&
           moment.india_minute_of_day < kSessionCloses;
  }
  if (window.market_days_only && !moment.trading_day) return false;
  return std::any_of(window.ranges.begin(), window.ranges.end(), [&](const auto& range) {
    return range.first <= moment.india_minute_of_day && moment.india_minute_of_day < range.second;
  });
}

std::chrono::system_clock::duration rate_period(ApiRate::Per per) {
  return per == ApiRate::Per::minute ? std::chrono::system_clock::duration(std::chrono::minutes(1))
                                     : std::chrono::system_clock::duration(std::chrono::seconds(1));
}

std::string rate_text(const ApiRate& rate) {
  if (!rate.text.empty()) return rate.text;
  const char* per = rate.per == ApiRate::Per::second ? "second" : rate.per == ApiRate::Per::minute ? "minute" : "day";
  return std::to_string(rate.count) + "/" + per;
}

}  // namespace

Result<BodyCheck> parse_body_check(std::string_view text) {
  BodyCheck check;
  check.text = std::string(text);
  std::size_t at = 0;
  skip_blanks(text, at);
  check.field = read_field(text, at);
  if (check.field.empty()) {
    return bad_check(text, "must start with a field name: letters, digits, '_' or '-', its parts joined by '.'");
  }
  skip_blanks(text, at);
  if (at < text.size() && text[at] == '*') {
    ++at;
    skip_blanks(text, at);
    check.factor = read_field(text, at);
    if (check.factor.empty()) return bad_check(text, "needs a field name after '*'");
    skip_blanks(text, at);
  }
  const std::string_view rest = text.substr(at);
  std::string_view operator_text;
  if (rest.starts_with("<=")) {
    check.op = BodyCheck::Op::less_or_equal;
    operator_text = "<=";
  } else if (rest.starts_with(">=")) {
    check.op = BodyCheck::Op::greater_or_equal;
    operator_text = ">=";
  } else if (rest.starts_with("==")) {
    check.op = BodyCheck::Op::equal;
    operator_text = "==";
  } else if (rest.starts_with("in") && (rest.size() == 2 || rest[2] == ' ' || rest[2] == '\t' || rest[2] == '[')) {
    check.op = BodyCheck::Op::in;
    operator_text = "in";
  } else {
    return bad_check(text,
                     "needs one of <=, >=, == or in after the field" + std::string(check.factor.empty() ? "" : "s"));
  }
  const std::string_view value_text = trim(rest.substr(operator_text.size()), " \t");
  if (value_text.empty()) return bad_check(text, "needs a value after '" + std::string(operator_text) + "'");
  boost::json::error_code error;
  check.value = boost::json::parse(boost::json::string_view(value_text.data(), value_text.size()), error);
  const std::string value = "'" + std::string(value_text) + "'";
  if (error) {
    return bad_check(text, "has " + value + " after '" + std::string(operator_text) +
                               "', which is not a JSON number, a string in double quotes or an array of them");
  }
  const bool product = !check.factor.empty();
  switch (check.op) {
    case BodyCheck::Op::less_or_equal:
    case BodyCheck::Op::greater_or_equal:
      if (!check.value.is_number()) {
        return bad_check(text,
                         "compares with '" + std::string(operator_text) + "', which needs a number, not " + value);
      }
      break;
    case BodyCheck::Op::equal:
      if (!check.value.is_number() && !(check.value.is_string() && !product)) {
        return bad_check(text, product ? "compares a product, which needs a number, not " + value
                                       : "needs a number or a string in double quotes after '==', not " + value);
      }
      break;
    case BodyCheck::Op::in: {
      const auto* list = check.value.if_array();
      if (list == nullptr || list->empty()) {
        return bad_check(text, "needs a non-empty array such as [\"NSE\", \"BSE\"] after 'in', not " + value);
      }
      for (const auto& element : *list) {
        if (!element.is_number() && !(element.is_string() && !product)) {
          return bad_check(text, product
                                     ? "compares a product, so its list must hold only numbers"
                                     : "needs a list of numbers and strings in double quotes after 'in', not " + value);
        }
      }
      break;
    }
  }
  return check;
}

ApiDecision ApiRuleBook::decide(const ApiRequestView& request, const ApiMoment& moment) {
  ApiDecision decision;
  const std::string method = uppercase(request.method);
  std::size_t index = 0;
  for (; index < spec_->rules.size(); ++index) {
    const ApiRule& rule = spec_->rules[index];
    if (method_matches(rule.methods, method) && api_path_matches(rule.path, request.path)) break;
  }
  if (index == spec_->rules.size()) {
    decision.why = "no rule allows " + method + " " + std::string(request.path);
    return decision;
  }
  const ApiRule& rule = spec_->rules[index];
  decision.rule = &rule;
  if (rule.action == ApiAction::deny) {
    decision.why = "rule " + rule.name + " denies " + method + " " + std::string(request.path);
    return decision;
  }
  if (rule.window && !within_window(*rule.window, moment)) {
    decision.why = "outside " + rule.window->text;
    return decision;
  }
  if (!rule.checks.empty()) {
    auto body = api_body::parse_body(request.content_type, request.body);
    if (!body.ok()) {
      decision.why = body.error().what + ", so rule " + rule.name + "'s checks cannot be made";
      return decision;
    }
    for (const BodyCheck& check : rule.checks) {
      if (auto why = api_body::check_refusal(check, *body)) {
        decision.why = std::move(*why);
        return decision;
      }
    }
  }
  if (rule.rate) {
    const ApiRate& rate = *rule.rate;
    if (rate.per == ApiRate::Per::day) {
      auto& [day, count] = passed_today_[index];
      if (day != moment.india_day) {
        day = moment.india_day;
        count = 0;
      }
      if (count >= rate.count) {
        decision.why = "over " + rate_text(rate);
        return decision;
      }
      ++count;
    } else {
      // Sliding: the requests passed in the last period, this one's moment included.
      auto& passed = passed_[index];
      const auto oldest_kept = moment.now - rate_period(rate.per);
      while (!passed.empty() && passed.front() <= oldest_kept) passed.pop_front();
      if (passed.size() >= rate.count) {
        decision.why = "over " + rate_text(rate);
        return decision;
      }
      passed.push_back(moment.now);
    }
  }
  decision.action = rule.action;
  return decision;
}

}  // namespace deskd::policy
