#include "runner/desk/budget_keeper.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"

namespace deskd::desk {
namespace {

constexpr std::int64_t kRaiseFormatVersion = 1;
// A raise file is one short line; anything larger is not ours.
constexpr std::uintmax_t kMaximumRaiseFileBytes = 4096;
// Amounts are sums of products of doubles: a call that fits exactly must not be refused
// for the last bit.
constexpr double kDollarTolerance = 1e-9;

std::string budget_count(std::uint64_t number) {
  std::string digits = std::to_string(number);
  for (auto position = digits.size(); position > 3; position -= 3) digits.insert(position - 3, ",");
  return digits;
}

std::string next_reset(IndiaDate today) {
  const IndiaDate tomorrow{std::chrono::sys_days(today) + std::chrono::days(1)};
  return iso_date(tomorrow) + " 00:00 India time";
}

std::string refusal_sentence(const BudgetRefusal& refusal, bool tokens) {
  const auto amount = [&](double value) {
    return tokens ? budget_count(static_cast<std::uint64_t>(value)) + " tokens" : budget_dollars(value);
  };
  const bool per_turn = refusal.cap == "per_turn_usd";
  std::string sentence = std::string(per_turn ? "the turn's budget of " : "the desk's daily budget of ") +
                         amount(refusal.value) + " is reached: " + amount(refusal.spent) + " spent and " +
                         amount(refusal.reserved) + " reserved by calls under way";
  if (refusal.asked > 0) sentence += ", and the next call could take up to " + amount(refusal.asked);
  sentence += "; it resets " + std::string(per_turn ? "" : "at ") + refusal.resets;
  if (refusal.cap == "daily_usd") sentence += " (or raise today's cap with `deskctl budget DESK --add USD`)";
  return sentence;
}

Result<double> read_raise(const std::filesystem::path& file, IndiaDate today) {
  const auto corrupt = [&](const std::string& why) {
    return Error::make(ErrorCode::invalid_argument, "The budget file " + file.native() + " is corrupt: " + why + ".");
  };
  std::error_code error;
  const auto size = std::filesystem::file_size(file, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return 0.0;
    return Error::make(ErrorCode::system, "The budget file " + file.native() + " cannot be read: " + error.message());
  }
  if (size > kMaximumRaiseFileBytes) return corrupt("it is over 4 KiB");
  std::ifstream stream(file);
  std::stringstream text;
  text << stream.rdbuf();
  if (!stream) return Error::make(ErrorCode::system, "The budget file " + file.native() + " cannot be read.");
  boost::system::error_code parse_error;
  const boost::json::value value = boost::json::parse(text.str(), parse_error);
  const auto* object = parse_error ? nullptr : value.if_object();
  if (object == nullptr) return corrupt("it is not a JSON object");
  const auto* version = object->if_contains("version");
  if (version == nullptr || !version->is_int64() || version->get_int64() != kRaiseFormatVersion) {
    return corrupt("its \"version\" is not 1");
  }
  const auto* date = object->if_contains("date");
  const auto parsed = date != nullptr && date->is_string() ? parse_iso_date(date->get_string()) : std::nullopt;
  if (!parsed) return corrupt("its \"date\" is not a date as YYYY-MM-DD");
  const auto* added = object->if_contains("added_usd");
  if (added == nullptr || !added->is_number()) return corrupt("its \"added_usd\" is not a number");
  const double amount = added->to_number<double>();
  if (!std::isfinite(amount) || amount < 0) return corrupt("its \"added_usd\" is negative");
  // A raise lasts for the India day it was made on.
  return *parsed == today ? amount : 0.0;
}

}  // namespace

boost::json::object BudgetRefusal::data() const {
  return {{"cap", cap},     {"value", value},   {"spent", spent},    {"reserved", reserved},
          {"asked", asked}, {"resets", resets}, {"reason", sentence}};
}

double worst_case_usd(std::uint64_t input_tokens, std::uint64_t output_tokens, const ModelPrice& price) {
  // Input may be written to the cache, which costs more than plain input (Anthropic: 1.25x).
  const double input_price = std::max(price.input_per_million, price.cache_write_per_million);
  return (static_cast<double>(input_tokens) * input_price +
          static_cast<double>(output_tokens) * price.output_per_million) /
         1e6;
}

std::string budget_dollars(double amount) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, amount >= 0.1 || amount == 0 ? "$%.2f" : "$%.4f", amount);
  return buffer;
}

// --- BudgetReservation ---

BudgetReservation::BudgetReservation(BudgetReservation&& other) noexcept
    : keeper_(std::exchange(other.keeper_, nullptr)), usd_(other.usd_), tokens_(other.tokens_), turn_(other.turn_) {}

BudgetReservation& BudgetReservation::operator=(BudgetReservation&& other) noexcept {
  if (this == &other) return *this;
  if (keeper_ != nullptr) keeper_->release(*this);
  keeper_ = std::exchange(other.keeper_, nullptr);
  usd_ = other.usd_;
  tokens_ = other.tokens_;
  turn_ = other.turn_;
  return *this;
}

BudgetReservation::~BudgetReservation() {
  if (keeper_ != nullptr) keeper_->release(*this);
}

// --- BudgetKeeper ---

BudgetKeeper::BudgetKeeper(const Clock& clock, UsageTracker& usage, BudgetCaps caps, std::uint32_t max_tokens,
                           std::filesystem::path raise_file)
    : clock_(clock),
      usage_(usage),
      caps_(caps),
      max_tokens_(max_tokens),
      raise_file_(std::move(raise_file)),
      price_(usage.configured_price()),
      raise_date_(india_date(clock.now())) {}

Result<void> BudgetKeeper::load() {
  std::lock_guard lock(mutex_);
  raise_date_ = india_date(clock_.now());
  added_usd_ = 0;
  DESKD_ASSIGN_OR_RETURN(added_usd_, read_raise(raise_file_, raise_date_));
  return success();
}

void BudgetKeeper::roll_over_raise(IndiaDate today) const {
  if (today == raise_date_) return;
  raise_date_ = today;
  added_usd_ = 0;
}

BudgetStatus BudgetKeeper::status_locked() const {
  const IndiaDate today = india_date(clock_.now());
  roll_over_raise(today);
  BudgetStatus status;
  status.caps = caps_;
  status.added_usd = added_usd_;
  for (const auto& [name, model] : usage_.today().models) {
    if (model.cost_usd) status.spent_usd += *model.cost_usd;
    status.spent_tokens += model.tokens.input_tokens + model.tokens.output_tokens + model.tokens.cache_read_tokens +
                           model.tokens.cache_write_tokens;
  }
  status.reserved_usd = reserved_usd_;
  status.reserved_tokens = reserved_tokens_;
  status.resets = next_reset(today);
  return status;
}

std::optional<BudgetRefusal> BudgetKeeper::check_locked(const BudgetStatus& now, double usd,
                                                        std::uint64_t tokens) const {
  const auto refuse = [&](std::string cap, double value, double spent, double reserved, double asked,
                          std::string resets) {
    BudgetRefusal refusal{std::move(cap), value, spent, reserved, asked, std::move(resets), {}};
    refusal.sentence = refusal_sentence(refusal, refusal.cap == "daily_tokens");
    if (!price_ && refusal.cap != "daily_tokens") {
      refusal.sentence =
          "the desk's model has no price, so its dollar cap (" + refusal.cap + ") cannot be held and no call is made";
    }
    return refusal;
  };
  if (caps_.daily_usd) {
    const double cap = *caps_.daily_usd + now.added_usd;
    if (!price_ || now.spent_usd + now.reserved_usd + usd > cap + kDollarTolerance) {
      return refuse("daily_usd", cap, now.spent_usd, now.reserved_usd, usd, now.resets);
    }
  }
  if (caps_.daily_tokens && now.spent_tokens + now.reserved_tokens + tokens > *caps_.daily_tokens) {
    return refuse("daily_tokens", static_cast<double>(*caps_.daily_tokens), static_cast<double>(now.spent_tokens),
                  static_cast<double>(now.reserved_tokens), static_cast<double>(tokens), now.resets);
  }
  return std::nullopt;
}

std::variant<BudgetReservation, BudgetRefusal> BudgetKeeper::reserve(std::uint64_t input_tokens) {
  std::lock_guard lock(mutex_);
  const std::uint64_t tokens = input_tokens + max_tokens_;
  const double usd = price_ ? worst_case_usd(input_tokens, max_tokens_, *price_) : 0;
  if (caps_.daily_usd || caps_.daily_tokens) {
    const BudgetStatus now = status_locked();
    if (auto refused = check_locked(now, usd, tokens)) return *std::move(refused);
  }
  if (caps_.per_turn_usd) {
    // Outside a turn (a /btw, a summary) the call is a turn of its own.
    const double spent = turn_ != 0 ? turn_spent_usd_ : 0;
    const double reserved = turn_ != 0 ? turn_reserved_usd_ : 0;
    if (!price_ || spent + reserved + usd > *caps_.per_turn_usd + kDollarTolerance) {
      BudgetRefusal refusal{"per_turn_usd", *caps_.per_turn_usd, spent, reserved, usd, "with the next turn", {}};
      refusal.sentence = price_ ? refusal_sentence(refusal, false)
                                : "the desk's model has no price, so its dollar cap (per_turn_usd) cannot be held and "
                                  "no call is made";
      return refusal;
    }
  }
  BudgetReservation reservation;
  reservation.keeper_ = this;
  reservation.usd_ = usd;
  reservation.tokens_ = tokens;
  reservation.turn_ = turn_;
  ++open_reservations_;
  reserved_usd_ += usd;
  reserved_tokens_ += tokens;
  if (turn_ != 0) turn_reserved_usd_ += usd;
  return reservation;
}

void BudgetKeeper::release(BudgetReservation& reservation) {
  std::lock_guard lock(mutex_);
  release_locked(reservation);
}

void BudgetKeeper::release_locked(BudgetReservation& reservation) {
  if (open_reservations_ > 0) --open_reservations_;
  // Sums of doubles drift: with nothing reserved, nothing is.
  reserved_usd_ = open_reservations_ == 0 ? 0 : std::max(0.0, reserved_usd_ - reservation.usd_);
  reserved_tokens_ = open_reservations_ == 0 ? 0 : reserved_tokens_ - std::min(reserved_tokens_, reservation.tokens_);
  if (reservation.turn_ != 0 && reservation.turn_ == turn_) {
    turn_reserved_usd_ = std::max(0.0, turn_reserved_usd_ - reservation.usd_);
  }
  reservation.keeper_ = nullptr;
}

boost::asio::awaitable<Result<void>> BudgetKeeper::settle_off_loop(BudgetReservation reservation, std::string model,
                                                                   std::optional<Usage> usage) {
  std::string contents;
  {
    // Counted and unreserved in one step: no one sees the call both spent and reserved,
    // nor neither.
    std::lock_guard lock(mutex_);
    UsageTracker::Counted counted = usage_.count_request(model, usage);
    contents = std::move(counted.contents);
    if (reservation.held() && reservation.turn_ != 0 && reservation.turn_ == turn_ && counted.cost_usd) {
      turn_spent_usd_ += *counted.cost_usd;
    }
    if (reservation.held()) release_locked(reservation);
  }
  co_return co_await usage_.save_off_loop(std::move(contents));
}

std::optional<BudgetRefusal> BudgetKeeper::at_daily_cap() const {
  if (!caps_.daily_usd && !caps_.daily_tokens) return std::nullopt;
  std::lock_guard lock(mutex_);
  const double usd = price_ ? worst_case_usd(0, max_tokens_, *price_) : 0;
  // What calls under way (a /btw) reserve may yet be released: at the cap is what is spent.
  BudgetStatus spent_only = status_locked();
  spent_only.reserved_usd = 0;
  spent_only.reserved_tokens = 0;
  auto refused = check_locked(spent_only, usd, max_tokens_);
  // "At the cap": nothing of a call's worst case is asked, only that none would fit.
  if (refused) {
    refused->asked = 0;
    refused->sentence = refusal_sentence(*refused, refused->cap == "daily_tokens");
  }
  return refused;
}

void BudgetKeeper::begin_turn() {
  std::lock_guard lock(mutex_);
  turn_ = ++last_turn_;
  turn_spent_usd_ = 0;
  turn_reserved_usd_ = 0;
}

void BudgetKeeper::end_turn() {
  std::lock_guard lock(mutex_);
  turn_ = 0;
  turn_spent_usd_ = 0;
  turn_reserved_usd_ = 0;
}

Result<BudgetStatus> BudgetKeeper::add_today(double usd) {
  if (!std::isfinite(usd) || usd <= 0 || usd > 1e6) {
    return Error::make(ErrorCode::invalid_argument, "--add takes a positive amount of US dollars, at most 1000000.");
  }
  std::lock_guard lock(mutex_);
  if (!caps_.daily_usd) {
    return Error::make(
        ErrorCode::refused,
        "This desk has no daily_usd cap ([budget] or [desk.budget]), so there is no dollar cap to raise.");
  }
  const IndiaDate today = india_date(clock_.now());
  roll_over_raise(today);
  const double raised = added_usd_ + usd;
  boost::json::object saved{{"version", kRaiseFormatVersion}, {"date", iso_date(today)}, {"added_usd", raised}};
  // Saved first: a raise the person was told of survives a restart, or is not made.
  DESKD_RETURN_IF_ERROR(
      write_file_atomically(raise_file_, boost::json::serialize(saved) + "\n", "today's budget raise"));
  added_usd_ = raised;
  return status_locked();
}

BudgetStatus BudgetKeeper::status() const {
  std::lock_guard lock(mutex_);
  return status_locked();
}

std::string BudgetKeeper::context_line() const {
  if (!caps_.any()) return "";
  const BudgetStatus now = status();
  std::string line = "budget:";
  std::string separator = " ";
  if (now.caps.daily_usd) {
    const double cap = *now.caps.daily_usd + now.added_usd;
    line += separator + budget_dollars(std::max(0.0, cap - now.spent_usd - now.reserved_usd)) + " of " +
            budget_dollars(cap) + " left today";
    separator = "; ";
  }
  if (now.caps.daily_tokens) {
    const std::uint64_t used = now.spent_tokens + now.reserved_tokens;
    const std::uint64_t cap = *now.caps.daily_tokens;
    line += separator + budget_count(used >= cap ? 0 : cap - used) + " of " + budget_count(cap) + " tokens left today";
    separator = "; ";
  }
  if (now.caps.per_turn_usd) line += separator + "at most " + budget_dollars(*now.caps.per_turn_usd) + " a turn";
  return line;
}

std::string BudgetKeeper::describe() const {
  if (!caps_.any()) return "";
  const BudgetStatus now = status();
  std::string text = "Budget (the daily caps reset at " + now.resets + "):";
  if (now.caps.daily_usd) {
    const double cap = *now.caps.daily_usd + now.added_usd;
    text += "\n  daily_usd: cap " + budget_dollars(cap);
    if (now.added_usd > 0) text += " (" + budget_dollars(now.added_usd) + " added today)";
    text += "; spent " + budget_dollars(now.spent_usd) + ", reserved " + budget_dollars(now.reserved_usd) + ", left " +
            budget_dollars(std::max(0.0, cap - now.spent_usd - now.reserved_usd));
  }
  if (now.caps.daily_tokens) {
    const std::uint64_t cap = *now.caps.daily_tokens;
    const std::uint64_t used = now.spent_tokens + now.reserved_tokens;
    text += "\n  daily_tokens: cap " + budget_count(cap) + "; spent " + budget_count(now.spent_tokens) + ", reserved " +
            budget_count(now.reserved_tokens) + ", left " + budget_count(used >= cap ? 0 : cap - used);
  }
  if (now.caps.per_turn_usd) text += "\n  per_turn_usd: " + budget_dollars(*now.caps.per_turn_usd) + " a turn";
  return text;
}

}  // namespace deskd::desk
