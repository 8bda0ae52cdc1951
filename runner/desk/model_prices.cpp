#include "runner/desk/model_prices.h"

#include <cctype>
#include <vector>

namespace deskd::desk {
namespace {

bool all_digits(std::string_view text) {
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return !text.empty();
}

// A plausible release date: 20YY, a month 01-12, a day 01-31. Version numbers that happen
// to be eight digits long would be rare, but a date check keeps them whole.
bool looks_like_date(std::string_view year, std::string_view month, std::string_view day) {
  if (!all_digits(year) || !all_digits(month) || !all_digits(day) || !year.starts_with("20")) return false;
  const int month_number = (month[0] - '0') * 10 + (month[1] - '0');
  const int day_number = (day[0] - '0') * 10 + (day[1] - '0');
  return month_number >= 1 && month_number <= 12 && day_number >= 1 && day_number <= 31;
}

}  // namespace

std::string undated_model_name(std::string_view model) {
  // "-2024-08-06": 11 characters.
  if (model.size() > 11 && model[model.size() - 11] == '-' && model[model.size() - 6] == '-' && model[model.size() - 3] == '-') {
    const std::string_view date = model.substr(model.size() - 10);
    if (looks_like_date(date.substr(0, 4), date.substr(5, 2), date.substr(8, 2))) {
      return std::string(model.substr(0, model.size() - 11));
    }
  }
  // "-20251001" or "@20251001": 9 characters.
  if (model.size() > 9 && (model[model.size() - 9] == '-' || model[model.size() - 9] == '@')) {
    const std::string_view date = model.substr(model.size() - 8);
    if (looks_like_date(date.substr(0, 4), date.substr(4, 2), date.substr(6, 2))) {
      return std::string(model.substr(0, model.size() - 9));
    }
  }
  return std::string(model);
}

std::optional<FoundPrice> find_price(const PriceTable& prices, std::string_view model, std::string_view configured) {
  const auto priced = [&](std::string_view name) -> std::optional<FoundPrice> {
    if (name.empty()) return std::nullopt;
    const auto found = prices.find(name);
    if (found == prices.end()) return std::nullopt;
    return FoundPrice{found->second, found->first};
  };
  if (auto exact = priced(model)) return exact;
  const std::string undated = undated_model_name(model);
  std::vector<std::string> candidates;
  if (undated != model) {
    candidates.push_back(undated);
    candidates.push_back(undated + "-latest");
  }
  const std::string configured_undated = undated_model_name(configured);
  // Ollama names a model "llama3:latest" when "llama3" was asked for.
  const bool same_model = !configured.empty() && (configured_undated == undated || model.starts_with(std::string(configured) + ":"));
  if (same_model) {
    candidates.emplace_back(configured);
    candidates.push_back(configured_undated);
  }
  for (const std::string& candidate : candidates) {
    if (auto found = priced(candidate)) return found;
  }
  return std::nullopt;
}

}  // namespace deskd::desk
