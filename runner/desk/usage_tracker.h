#pragma once
// UsageTracker: what a desk's models used today (the India day), for /usage and /status,
// and on the days before it (at most kDaysKept days in all), for the spend charts. Only
// token counts and requests are kept; the cost is worked out from the price table whenever
// it is asked for, so a corrected price applies to the whole day.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "runner/events/india_time.h"

namespace deskd::desk {

/// Tokens of one model call, or a sum of them.
struct Usage {
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  std::uint64_t cache_read_tokens = 0;
  std::uint64_t cache_write_tokens = 0;

  bool operator==(const Usage&) const = default;
};

/// What a model costs, in US dollars per million tokens of each kind.
struct ModelPrice {
  double input_per_million = 0;
  double output_per_million = 0;
  double cache_read_per_million = 0;
  double cache_write_per_million = 0;
};

/// Prices by model name: as the provider reports the model, or undated (model_prices.h).
using PriceTable = std::map<std::string, ModelPrice, std::less<>>;

/// One model's usage today.
struct ModelUsage {
  Usage tokens;
  std::uint64_t requests = 0;
  /// Requests whose server sent no token counts: counted, their tokens unknown.
  std::uint64_t unreported_requests = 0;
  std::optional<double> cost_usd;  ///< nullopt when the price table does not know the model.
  std::string priced_as;           ///< the price table's name for it, when not its own
};

/// Every model's usage on one India day.
struct DailyUsage {
  IndiaDate date;
  std::map<std::string, ModelUsage, std::less<>> models;
};

class UsageTracker {
 public:
  /// Days kept in all, today's included: two months of charts, in a file of some kilobytes.
  static constexpr std::size_t kDaysKept = 62;

  /// A tracker that keeps its day in `file` (its folder must exist) and prices calls with
  /// `prices` (found as find_price does, `configured_model` being the model the desk's
  /// config names). Starts empty; call load() to pick up a day saved before a restart.
  UsageTracker(const Clock& clock, std::filesystem::path file, PriceTable prices, std::string configured_model = {});

  /// Reads the saved file. A missing file, or one from another India day, leaves today
  /// empty; an unreadable or corrupt file is an error, today stays empty, and the next
  /// record() replaces the file.
  Result<void> load();

  /// Adds one request's `usage` for `model` to today (first starting a new day if the
  /// India date has changed), then saves. nullopt: the server reported no token counts;
  /// the request counts, its tokens are unknown (not zero). The count is kept even when
  /// saving fails.
  Result<void> record(std::string_view model, const std::optional<Usage>& usage);
  /// record(), with the file written off the event loop (save_file_off_loop): what a turn
  /// uses, so that its save never holds up the daemon's other work.
  boost::asio::awaitable<Result<void>> record_off_loop(std::string model, std::optional<Usage> usage);

  /// What one counted request left: the file's new contents, to be saved with
  /// save_off_loop(), and the request's cost (nullopt: no price, or no token counts).
  struct Counted {
    std::string contents;
    std::optional<double> cost_usd;
  };
  /// The counting half of record_off_loop(), for the budget keeper, which counts under its
  /// own lock so that a settled call is never both spent and still reserved.
  Counted count_request(std::string_view model, const std::optional<Usage>& usage);
  /// The saving half: writes `contents` (from count_request) off the event loop.
  boost::asio::awaitable<Result<void>> save_off_loop(std::string contents);

  /// Told each counted request (deskd's metrics): its model, its tokens (none: the server
  /// reported none) and its cost (none: no price, or no tokens). Called under the tracker's
  /// lock: it must be quick and must not call the tracker.
  using RequestObserver =
      std::function<void(std::string_view model, const std::optional<Usage>& usage, std::optional<double> cost_usd)>;
  /// Tells every later request to `observer`. Call it before the tracker is shared.
  void tell_requests_to(RequestObserver observer) { observer_ = std::move(observer); }

  /// The price of the model the desk's config names, as find_price finds it; nullopt when
  /// the price table has none (the budget keeper prices a call's worst case with it).
  std::optional<ModelPrice> configured_price() const;

  /// Today's usage with costs; empty once the India day has changed.
  DailyUsage today() const;
  /// The kept days with costs, oldest first, today last (empty days before today are not
  /// kept: a day with no request has no entry).
  std::vector<DailyUsage> days() const;

  /// A few lines for /usage and /status: per model tokens, requests and cost, and a total.
  std::string describe() const;

  const std::filesystem::path& file() const { return file_; }

 private:
  /// Starts a new day if the clock has moved to another India date, keeping the one that
  /// ended among the past days. Needs mutex_.
  void roll_over_if_new_day(IndiaDate now) const;
  /// Keeps `day` among the past days, at most kDaysKept - 1 of them. Needs mutex_.
  void keep_past_day(DailyUsage day) const;
  /// `day` with each model's cost from the price table.
  DailyUsage priced(DailyUsage day) const;
  /// Adds the request to today and returns the file's new contents. Needs mutex_.
  std::string count(std::string_view model, const std::optional<Usage>& usage);
  /// One request's cost; nullopt without tokens or a price.
  std::optional<double> cost_of_request(std::string_view model, const std::optional<Usage>& usage) const;

  const Clock& clock_;
  const std::filesystem::path file_;
  const PriceTable prices_;
  const std::string configured_model_;
  RequestObserver observer_;
  mutable std::mutex mutex_;
  // Mutable because reading "today" after midnight must drop yesterday.
  mutable IndiaDate date_;
  mutable std::map<std::string, ModelUsage, std::less<>> models_;  // costs left unset
  mutable std::vector<DailyUsage> past_;                           // oldest first, costs unset
};

/// The estimated cost of `tokens` at `price`, in US dollars.
double cost_of(const Usage& tokens, const ModelPrice& price);

}  // namespace deskd::desk
