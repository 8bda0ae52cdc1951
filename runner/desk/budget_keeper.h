#pragma once
// BudgetKeeper: a desk's spend caps ([budget], [desk.budget]), held before each model call.
//
// Every model call of the desk — its turns, its subagents', a /btw, a summary — first
// reserves its worst case: the request's input as the runner estimates it plus the model's
// max_tokens, in tokens and, at the desk's model's prices, in dollars. A reservation that
// does not fit what is left today (daily_usd, daily_tokens) or in the running turn
// (per_turn_usd) is refused and no call is made. After the call the reservation is settled
// with the real usage (also when the reply came whole but could not be used, a refusal or a
// reply cut inside a tool call: the API bills it), or released when the call failed before
// a reply. Reserving and settling happen
// under one mutex, so calls started at once (four subagents) can never overshoot a cap.
//
// Today's spent is what UsageTracker records (one source of truth): the keeper adds only
// what is reserved and not yet settled, and a raise of today's dollar cap (`deskctl budget
// DESK --add USD`), which lasts for the India day and is kept across a restart in its own
// small file beside the usage file. The day is the India day, as UsageTracker's.
//
// A keeper of its own, not more of UsageTracker: the tracker counts what was used (and is
// used without caps, by `deskd run` and every desk); the keeper decides what may be used.

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include "base/clock.h"
#include "base/result.h"
#include "runner/desk/usage_tracker.h"
#include "runner/events/india_time.h"

namespace deskd::desk {

/// [budget] and [desk.budget]: each cap optional, each positive when set.
struct BudgetCaps {
  std::optional<double> daily_usd;
  std::optional<std::uint64_t> daily_tokens;
  std::optional<double> per_turn_usd;

  bool any() const { return daily_usd || daily_tokens || per_turn_usd; }
  bool has_dollar_cap() const { return daily_usd || per_turn_usd; }
  bool operator==(const BudgetCaps&) const = default;
};

/// Why a call may not be made: which cap, its value, what was spent and reserved, when it
/// resets. `cap` is "daily_usd", "daily_tokens" or "per_turn_usd"; amounts in the cap's
/// unit (dollars, or tokens for daily_tokens).
struct BudgetRefusal {
  std::string cap;
  double value = 0;
  double spent = 0;
  double reserved = 0;
  double asked = 0;      ///< the refused call's worst case (0 for "the desk is at its cap")
  std::string resets;    ///< "2026-05-02 00:00 India time", or "with the next turn"
  std::string sentence;  ///< "the desk's daily budget of $5.00 is reached (...)"

  /// The BUDGET_REACHED event's data (without the trigger).
  boost::json::object data() const;
};

/// Thrown by a model runner whose call was refused: ends the turn as BUDGET_REACHED, and
/// a subagent's run with an error its desk's model reads (what() is the sentence).
class BudgetReached : public std::runtime_error {
 public:
  explicit BudgetReached(BudgetRefusal refusal) : std::runtime_error(refusal.sentence), refusal_(std::move(refusal)) {}
  const BudgetRefusal& refusal() const { return refusal_; }

 private:
  BudgetRefusal refusal_;
};

/// Today's caps and where the desk stands against them.
struct BudgetStatus {
  BudgetCaps caps;
  double added_usd = 0;  ///< raised today by deskctl budget --add
  double spent_usd = 0;  ///< of models with a price
  std::uint64_t spent_tokens = 0;
  double reserved_usd = 0;
  std::uint64_t reserved_tokens = 0;
  std::string resets;  ///< when the daily caps reset, India time
};

class BudgetKeeper;

/// A reservation held for one call: settled by BudgetKeeper::settle_off_loop, released by
/// its destructor otherwise (the call failed or was stopped). Move-only.
class BudgetReservation {
 public:
  BudgetReservation() = default;
  BudgetReservation(BudgetReservation&& other) noexcept;
  BudgetReservation& operator=(BudgetReservation&& other) noexcept;
  BudgetReservation(const BudgetReservation&) = delete;
  BudgetReservation& operator=(const BudgetReservation&) = delete;
  ~BudgetReservation();

  bool held() const { return keeper_ != nullptr; }
  double usd() const { return usd_; }
  std::uint64_t tokens() const { return tokens_; }

 private:
  friend class BudgetKeeper;
  BudgetKeeper* keeper_ = nullptr;
  double usd_ = 0;
  std::uint64_t tokens_ = 0;
  std::uint64_t turn_ = 0;  ///< the turn it counts in; 0 for none
};

class BudgetKeeper {
 public:
  /// `usage` (which outlives the keeper) is today's spent and knows the model's prices;
  /// `max_tokens` is the model's, every call's most output; `raise_file` keeps today's
  /// raise. A dollar cap without a price for the model refuses every call (deskd check
  /// refuses that config first).
  BudgetKeeper(const Clock& clock, UsageTracker& usage, BudgetCaps caps, std::uint32_t max_tokens,
               std::filesystem::path raise_file);

  /// Reads today's raise; a missing file or one of another day is none. A corrupt file is
  /// an error and counts as none.
  Result<void> load();

  /// Reserves a call of `input_tokens` (the runner's estimate) plus max_tokens, or says
  /// which cap it would pass. Never blocks on anything but the mutex.
  std::variant<BudgetReservation, BudgetRefusal> reserve(std::uint64_t input_tokens);

  /// Counts the call's real `usage` in the usage tracker and drops its reservation, under
  /// one lock; then saves the usage file off the event loop.
  boost::asio::awaitable<Result<void>> settle_off_loop(BudgetReservation reservation, std::string model,
                                                       std::optional<Usage> usage);

  /// Whether, with what is spent today, even a call of no input (max_tokens alone) would
  /// pass a daily cap: the desk is at its cap and a trigger is answered at once with the
  /// refusal. What calls under way reserve is left out (it may yet be released).
  std::optional<BudgetRefusal> at_daily_cap() const;

  /// A turn of the desk starts or ends: per_turn_usd counts the calls between (its
  /// subagents' too).
  void begin_turn();
  void end_turn();

  /// Raises today's dollar cap by `usd` (> 0) for the rest of the India day, and saves it.
  /// Refused when the desk has no daily_usd cap.
  Result<BudgetStatus> add_today(double usd);

  BudgetStatus status() const;
  /// "budget: $1.20 of $5.00 left today" for the context line; "" without caps.
  std::string context_line() const;
  /// Lines for /usage and /status: each cap, spent, reserved, left; "" without caps.
  std::string describe() const;

  const BudgetCaps& caps() const { return caps_; }

 private:
  friend class BudgetReservation;
  void release(BudgetReservation& reservation);
  void release_locked(BudgetReservation& reservation);  // under mutex_
  /// Drops yesterday's raise once the India day has changed. Needs mutex_.
  void roll_over_raise(IndiaDate today) const;
  BudgetStatus status_locked() const;
  std::optional<BudgetRefusal> check_locked(const BudgetStatus& now, double usd, std::uint64_t tokens) const;

  const Clock& clock_;
  UsageTracker& usage_;
  const BudgetCaps caps_;
  const std::uint32_t max_tokens_;
  const std::filesystem::path raise_file_;
  const std::optional<ModelPrice> price_;
  mutable std::mutex mutex_;
  mutable IndiaDate raise_date_;
  mutable double added_usd_ = 0;
  // What reserved calls may still spend; not tied to a day: a call made before midnight is
  // counted by the tracker on the day it ends.
  std::uint64_t open_reservations_ = 0;
  double reserved_usd_ = 0;
  std::uint64_t reserved_tokens_ = 0;
  // The running turn (0: none): what its settled calls spent and its open ones reserve.
  std::uint64_t turn_ = 0;
  std::uint64_t last_turn_ = 0;
  double turn_spent_usd_ = 0;
  double turn_reserved_usd_ = 0;
};

/// The worst case of a call, in dollars, at `price`: input at the dearer of the input and
/// cache-write prices, and `output_tokens` at the output price.
double worst_case_usd(std::uint64_t input_tokens, std::uint64_t output_tokens, const ModelPrice& price);

/// "$1.20" (and "$0.0042" below ten cents), as /usage writes amounts.
std::string budget_dollars(double amount);

}  // namespace deskd::desk
