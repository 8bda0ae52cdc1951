// [budget] and [desk.budget]: a desk's spend caps (runner/desk/budget_keeper.h). A desk's
// table starts as a copy of [budget], as [desk.model] starts from [model]; the checks that
// need the desk's model wait until [desk.model] has been laid over [model].

#include "runner/config/config_reader.h"
#include "runner/desk/model_prices.h"

namespace deskd::app::config_detail {

void read_budget(TableReader& reader, BudgetConfig& budget, BudgetPlaces& places) {
  // A cap of zero would stop every call: a desk without a cap leaves the key out.
  const NumberRange dollars{0, true, 1e9};
  if (auto usd = reader.number("daily_usd", dollars)) {
    budget.daily_usd = *usd;
    places.daily_usd = reader.where(*reader.find("daily_usd"));
  }
  if (auto tokens = reader.whole("daily_tokens", 1, std::int64_t{1} << 50)) {
    budget.daily_tokens = static_cast<std::uint64_t>(*tokens);
  }
  if (auto usd = reader.number("per_turn_usd", dollars)) {
    budget.per_turn_usd = *usd;
    places.per_turn_usd = reader.where(*reader.find("per_turn_usd"));
  }
}

void check_budget(const DeskConfig& desk, const BudgetPlaces& places, ProblemList& problems) {
  if (!desk.budget.has_dollar_cap()) return;
  // The budget keeper prices a call's worst case as the usage tracker prices its cost.
  desk::PriceTable prices;
  for (const auto& [name, price] : desk.model.prices) {
    prices[name] = desk::ModelPrice{price.input, price.output, price.cache_read, price.cache_write};
  }
  if (desk::find_price(prices, desk.model.model, desk.model.model)) return;
  const std::string model =
      desk.model.model.empty() ? "provider " + in_quotes(desk.model.provider) : "model " + in_quotes(desk.model.model);
  const auto refuse = [&](const std::optional<ConfigPosition>& where, const char* key) {
    if (!where) return;
    problems.add(*where, std::string("'") + key + "' of desk " + in_quotes(desk.name) + " is a dollar cap, but its " +
                             model + " has no price, so deskd could not tell what a call costs; add [model.prices.\"" +
                             (desk.model.model.empty() ? std::string("NAME") : desk.model.model) +
                             "\"] (input and output, US dollars a million tokens) or cap daily_tokens instead");
  };
  refuse(places.daily_usd, "daily_usd");
  refuse(places.per_turn_usd, "per_turn_usd");
}

}  // namespace deskd::app::config_detail
