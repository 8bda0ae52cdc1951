#include "runner/desk/usage_tracker.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "base/atomic_file.h"
#include "runner/desk/file_saver.h"
#include "base/unique_fd.h"
#include "runner/desk/model_prices.h"

namespace deskd::desk {
namespace {

constexpr std::int64_t kFormatVersion = 1;
// A day of a few models is a few hundred bytes; a bigger file is not ours.
constexpr std::size_t kMaximumFileBytes = 1 << 20;
constexpr const char* kCounterNames[] = {"requests", "input_tokens", "output_tokens",
                                         "cache_read_tokens", "cache_write_tokens"};
// Added later: a file without it (written before) means none; an older deskd reading a
// file with it passes over it. So the format stays version 1.
constexpr const char* kUnreportedRequests = "unreported_requests";

Result<std::string> read_file(const std::filesystem::path& file) {
  UniqueFd fd(retry_on_eintr([&] { return ::open(file.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) return Error::from_errno(errno, "The usage file " + file.native() + " cannot be opened");
  std::string contents;
  char buffer[16384];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0)
      return Error::from_errno(errno, "Reading the usage file " + file.native() + " failed");
    if (count == 0) return contents;
    contents.append(buffer, static_cast<std::size_t>(count));
    if (contents.size() > kMaximumFileBytes) {
      return Error::make(
          ErrorCode::invalid_argument,
          "The usage file " + file.native() + " is over 1 MiB, so it is not a usage file.");
    }
  }
}

// One place maps the file's counter names to fields, for both reading and writing.
template <typename SomeModelUsage>  // ModelUsage or const ModelUsage
auto* counter(SomeModelUsage& usage, std::string_view name) {
  if (name == "requests") return &usage.requests;
  if (name == "input_tokens") return &usage.tokens.input_tokens;
  if (name == "output_tokens") return &usage.tokens.output_tokens;
  if (name == "cache_read_tokens") return &usage.tokens.cache_read_tokens;
  return &usage.tokens.cache_write_tokens;
}

// Added later too: "past", the days before today, each {date, models}; read as above.
constexpr const char* kPastDays = "past";

boost::json::object models_json(const std::map<std::string, ModelUsage, std::less<>>& models) {
  boost::json::object by_model;
  for (const auto& [name, usage] : models) {
    boost::json::object counters;
    for (const char* counter_name : kCounterNames) {
      counters[counter_name] = *counter(usage, counter_name);
    }
    counters[kUnreportedRequests] = usage.unreported_requests;
    by_model[name] = std::move(counters);
  }
  return by_model;
}

std::string to_json(IndiaDate date, const std::map<std::string, ModelUsage, std::less<>>& models,
                    const std::vector<DailyUsage>& past) {
  boost::json::object day;
  day["version"] = kFormatVersion;
  day["date"] = iso_date(date);
  day["models"] = models_json(models);
  if (!past.empty()) {
    boost::json::array past_days;
    for (const DailyUsage& kept : past) {
      past_days.push_back(boost::json::object{{"date", iso_date(kept.date)}, {"models", models_json(kept.models)}});
    }
    day[kPastDays] = std::move(past_days);
  }
  return boost::json::serialize(day) + "\n";
}

std::optional<std::uint64_t> as_counter(const boost::json::value& value) {
  if (const auto* unsigned_value = value.if_uint64()) return *unsigned_value;
  if (const auto* signed_value = value.if_int64(); signed_value != nullptr && *signed_value >= 0) {
    return static_cast<std::uint64_t>(*signed_value);
  }
  return std::nullopt;
}

struct SavedDay {
  IndiaDate date;
  std::map<std::string, ModelUsage, std::less<>> models;
};

struct SavedFile {
  SavedDay day;
  std::vector<SavedDay> past;
};

// One day's {date, models}; `corrupt` makes the error.
template <typename Corrupt>
Result<SavedDay> day_from_json(const boost::json::object* day, const Corrupt& corrupt) {
  const auto* date_value = day->if_contains("date");
  const auto date = date_value != nullptr && date_value->is_string()
                        ? parse_iso_date(date_value->get_string())
                        : std::nullopt;
  if (!date) return corrupt("its \"date\" is not a date as YYYY-MM-DD");
  const auto* models_value = day->if_contains("models");
  if (models_value == nullptr || !models_value->is_object())
    return corrupt("its \"models\" is not an object");
  SavedDay saved{*date, {}};
  for (const auto& [name, counters_value] : models_value->get_object()) {
    const auto* counters = counters_value.if_object();
    if (counters == nullptr)
      return corrupt("the entry for \"" + std::string(name) + "\" is not an object");
    ModelUsage usage;
    for (const char* counter_name : kCounterNames) {
      const auto* field = counters->if_contains(counter_name);
      const auto count = field != nullptr ? as_counter(*field) : std::nullopt;
      if (!count) {
        return corrupt("\"" + std::string(name) + "\" has no whole, non-negative \"" +
                       counter_name + "\"");
      }
      *counter(usage, counter_name) = *count;
    }
    if (const auto* field = counters->if_contains(kUnreportedRequests)) {
      const auto count = as_counter(*field);
      if (!count || *count > usage.requests) {
        return corrupt("\"" + std::string(name) + "\" has an \"" + kUnreportedRequests +
                       "\" that is not a whole number from 0 to its requests");
      }
      usage.unreported_requests = *count;
    }
    saved.models.emplace(std::string(name), usage);
  }
  return saved;
}

Result<SavedFile> from_json(std::string_view text, const std::filesystem::path& file) {
  const auto corrupt = [&](const std::string& why) {
    return Error::make(ErrorCode::invalid_argument, "The usage file " + file.native() + " is corrupt: " + why + ".");
  };
  boost::system::error_code error;
  const boost::json::value value = boost::json::parse(text, error);
  if (error) return corrupt("it is not JSON (" + error.message() + ")");
  const auto* day = value.if_object();
  if (day == nullptr) return corrupt("it is not a JSON object");
  const auto* version = day->if_contains("version");
  if (version == nullptr || !version->is_int64() || version->get_int64() != kFormatVersion) {
    return corrupt("its \"version\" is not 1");
  }
  SavedFile saved;
  DESKD_ASSIGN_OR_RETURN(saved.day, day_from_json(day, corrupt));
  if (const auto* past = day->if_contains(kPastDays)) {
    if (!past->is_array()) return corrupt("its \"past\" is not a list");
    for (const auto& entry : past->get_array()) {
      if (!entry.is_object()) return corrupt("a day of its \"past\" is not an object");
      DESKD_ASSIGN_OR_RETURN(SavedDay kept, day_from_json(&entry.get_object(), corrupt));
      saved.past.push_back(std::move(kept));
    }
  }
  return saved;
}

std::string grouped(std::uint64_t number) {
  std::string digits = std::to_string(number);
  for (auto position = digits.size(); position > 3; position -= 3) {
    digits.insert(position - 3, ",");
  }
  return digits;
}

std::string dollars(double amount) {
  char buffer[64];
  // Cents hide a day of a cheap model; small amounts get two more places.
  std::snprintf(buffer, sizeof buffer, amount >= 0.1 || amount == 0 ? "$%.2f" : "$%.4f", amount);
  return buffer;
}

std::string describe_model(std::string_view name, const ModelUsage& usage) {
  std::string line = "  " + std::string(name) + ": " + grouped(usage.requests) +
                     (usage.requests == 1 ? " request" : " requests") + "; ";
  const bool none_reported = usage.unreported_requests == usage.requests;
  if (none_reported) {
    line += "tokens unknown (the server reported no token counts)";
  } else {
    line += "tokens " + grouped(usage.tokens.input_tokens) + " in, " + grouped(usage.tokens.output_tokens) + " out";
    if (usage.tokens.cache_read_tokens != 0)
      line += ", " + grouped(usage.tokens.cache_read_tokens) + " cache read";
    if (usage.tokens.cache_write_tokens != 0)
      line += ", " + grouped(usage.tokens.cache_write_tokens) + " cache write";
    if (usage.unreported_requests != 0) {
      line += " (and unknown for " + grouped(usage.unreported_requests) +
              (usage.unreported_requests == 1 ? " request" : " requests") + " whose server reported no token counts)";
    }
  }
  if (!usage.cost_usd) {
    line += "; cost unknown (no price for this model)";
  } else if (none_reported) {
    line += "; cost unknown (no token counts)";
  } else {
    line += "; about " + dollars(*usage.cost_usd) + (usage.unreported_requests != 0 ? " or more" : "");
    if (!usage.priced_as.empty()) line += " (priced as " + usage.priced_as + ")";
  }
  return line;
}

}  // namespace

double cost_of(const Usage& tokens, const ModelPrice& price) {
  const auto part = [](std::uint64_t count, double per_million) {
    return static_cast<double>(count) * per_million / 1e6;
  };
  return part(tokens.input_tokens, price.input_per_million) +
         part(tokens.output_tokens, price.output_per_million) +
         part(tokens.cache_read_tokens, price.cache_read_per_million) +
         part(tokens.cache_write_tokens, price.cache_write_per_million);
}

UsageTracker::UsageTracker(const Clock& clock, std::filesystem::path file, PriceTable prices, std::string configured_model)
    : clock_(clock),
      file_(std::move(file)),
      prices_(std::move(prices)),
      configured_model_(std::move(configured_model)),
      date_(india_date(clock.now())) {}

void UsageTracker::roll_over_if_new_day(IndiaDate now) const {
  if (now == date_) return;
  // A clock set back keeps no "past" day after today.
  if (date_ < now && !models_.empty()) keep_past_day(DailyUsage{date_, std::move(models_)});
  date_ = now;
  models_.clear();
}

void UsageTracker::keep_past_day(DailyUsage day) const {
  const auto after = std::find_if(past_.begin(), past_.end(), [&](const DailyUsage& kept) { return kept.date >= day.date; });
  if (after != past_.end() && after->date == day.date) return;  // kept already
  past_.insert(after, std::move(day));
  if (past_.size() > kDaysKept - 1) past_.erase(past_.begin(), past_.end() - static_cast<long>(kDaysKept - 1));
}

Result<void> UsageTracker::load() {
  std::lock_guard lock(mutex_);
  roll_over_if_new_day(india_date(clock_.now()));
  models_.clear();
  std::error_code error;
  if (!std::filesystem::exists(file_, error) && !error) return success();
  DESKD_ASSIGN_OR_RETURN(const std::string text, read_file(file_));
  DESKD_ASSIGN_OR_RETURN(SavedFile saved, from_json(text, file_));
  past_.clear();
  for (SavedDay& kept : saved.past) {
    if (kept.date < date_) keep_past_day(DailyUsage{kept.date, std::move(kept.models)});
  }
  // A file from another India day describes a day that is over: today starts empty.
  if (saved.day.date == date_) {
    models_ = std::move(saved.day.models);
  } else if (saved.day.date < date_ && !saved.day.models.empty()) {
    keep_past_day(DailyUsage{saved.day.date, std::move(saved.day.models)});
  }
  return success();
}

std::string UsageTracker::count(std::string_view model, const std::optional<Usage>& usage) {
  roll_over_if_new_day(india_date(clock_.now()));
  auto found = models_.find(model);
  if (found == models_.end()) found = models_.emplace(std::string(model), ModelUsage{}).first;
  ModelUsage& total = found->second;
  total.requests += 1;
  if (!usage) {
    total.unreported_requests += 1;
  } else {
    total.tokens.input_tokens += usage->input_tokens;
    total.tokens.output_tokens += usage->output_tokens;
    total.tokens.cache_read_tokens += usage->cache_read_tokens;
    total.tokens.cache_write_tokens += usage->cache_write_tokens;
  }
  if (observer_) observer_(model, usage, cost_of_request(model, usage));
  return to_json(date_, models_, past_);
}

Result<void> UsageTracker::record(std::string_view model, const std::optional<Usage>& usage) {
  // The write under the lock too: two threads must not share the temporary file.
  std::lock_guard lock(mutex_);
  return write_file_atomically(file_, count(model, usage), "today's usage");
}

// By value: the coroutine starts only when awaited, and may outlive the caller's arguments.
boost::asio::awaitable<Result<void>> UsageTracker::record_off_loop(std::string model, std::optional<Usage> usage) {
  Counted counted = count_request(model, usage);
  co_return co_await save_off_loop(std::move(counted.contents));
}

UsageTracker::Counted UsageTracker::count_request(std::string_view model, const std::optional<Usage>& usage) {
  std::lock_guard lock(mutex_);
  return Counted{count(model, usage), cost_of_request(model, usage)};
}

std::optional<double> UsageTracker::cost_of_request(std::string_view model, const std::optional<Usage>& usage) const {
  if (!usage) return std::nullopt;
  const auto found = find_price(prices_, model, configured_model_);
  if (!found) return std::nullopt;
  return cost_of(*usage, found->price);
}

boost::asio::awaitable<Result<void>> UsageTracker::save_off_loop(std::string contents) {
  co_return co_await save_file_off_loop(file_, std::move(contents), "today's usage");
}

std::optional<ModelPrice> UsageTracker::configured_price() const {
  const auto found = find_price(prices_, configured_model_, configured_model_);
  if (!found) return std::nullopt;
  return found->price;
}

DailyUsage UsageTracker::priced(DailyUsage day) const {
  for (auto& [name, usage] : day.models) {
    if (const auto found = find_price(prices_, name, configured_model_)) {
      usage.cost_usd = cost_of(usage.tokens, found->price);
      if (found->priced_as != name) usage.priced_as = found->priced_as;
    }
  }
  return day;
}

DailyUsage UsageTracker::today() const {
  std::lock_guard lock(mutex_);
  roll_over_if_new_day(india_date(clock_.now()));
  return priced(DailyUsage{date_, models_});
}

std::vector<DailyUsage> UsageTracker::days() const {
  std::lock_guard lock(mutex_);
  roll_over_if_new_day(india_date(clock_.now()));
  std::vector<DailyUsage> kept_days;
  kept_days.reserve(past_.size() + 1);
  for (const DailyUsage& kept : past_) kept_days.push_back(priced(kept));
  kept_days.push_back(priced(DailyUsage{date_, models_}));
  return kept_days;
}

std::string UsageTracker::describe() const {
  const DailyUsage day = today();
  const std::string date =
      format_india_day(day.date) + " " + std::to_string(static_cast<int>(day.date.year()));
  if (day.models.empty()) return "No model usage today (" + date + ", India time).";
  std::string text = "Usage today (" + date + ", India time):";
  std::uint64_t requests = 0;
  double known_cost = 0;
  std::string unpriced;
  std::size_t unpriced_count = 0;
  bool partly_unreported = false;  // a known cost that leaves out requests of unknown tokens
  for (const auto& [name, usage] : day.models) {
    text += "\n" + describe_model(name, usage);
    requests += usage.requests;
    if (usage.cost_usd && usage.unreported_requests < usage.requests) {
      known_cost += *usage.cost_usd;
      partly_unreported = partly_unreported || usage.unreported_requests != 0;
    } else {
      unpriced += (unpriced.empty() ? "" : ", ") + name;
      ++unpriced_count;
    }
  }
  if (day.models.size() > 1) {
    text += "\n  Total: " + grouped(requests) + " requests; ";
    if (unpriced.empty()) {
      text += "about " + dollars(known_cost) + (partly_unreported ? " or more" : "");
    } else if (unpriced_count == day.models.size()) {
      text += "cost unknown";
    } else {
      text += "about " + dollars(known_cost) + " plus an unknown cost for " + unpriced;
    }
  }
  return text;
}

}  // namespace deskd::desk
