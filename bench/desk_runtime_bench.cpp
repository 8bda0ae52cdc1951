// desk_runtime_bench: deskd's DeskRuntime, measured. bench/desk_runtime builds and runs it.
// See bench/README.md.
//
// One io_context runs on a worker thread (as in deskd); the main thread submits triggers
// and reads the events from one EventBus subscription (large enough that none is dropped).
// The desks have no journal and no session keeper: DeskParts is empty. It measures, in
// this order:
//   - memory per idle desk: VmRSS (/proc/self/status) before and after creating --desks
//     desks (each with its own no-op turn runner, sharing the bus and the io_context),
//     starting them (run()) and seeing every DESK_STARTED; (after - before) / desks, in
//     KiB. It goes first, so that memory freed by the other parts cannot be reused here;
//   - triggers per second: --triggers plain messages submitted to one desk whose turn
//     runner returns at once, from the first submit until the last TURN_FINISHED is seen;
//   - /status latency while a turn runs: one message whose turn waits until released, then
//     --status-runs times "/status", each from just before submit() to the moment its
//     COMMAND_ANSWERED is seen (steady_clock); median and p99 (nearest rank), in us.
//
// Prints key=value lines (desk_...) on stdout, then a summary for people (lines starting
// with '#'). Exits 1 when an awaited event does not come within 60 s or events were
// dropped; 2 on a bad argument.

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "runner/desk/desk_runtime.h"
#include "runner/desk/turn_runner.h"
#include "runner/events/event_bus.h"
#include "runner/events/trigger.h"

namespace {

namespace asio = boost::asio;
namespace desk = deskd::desk;
using Steady = std::chrono::steady_clock;

struct Options {
  long triggers = 20000;
  long status_runs = 1000;
  long desks = 100;
};

std::optional<Options> parse_arguments(int argc, char** argv) {
  Options options;
  for (int index = 1; index < argc; ++index) {
    const std::string argument = argv[index];
    long* target = nullptr;
    if (argument == "--triggers") target = &options.triggers;
    else if (argument == "--status-runs") target = &options.status_runs;
    else if (argument == "--desks") target = &options.desks;
    if (target == nullptr || index + 1 >= argc) {
      std::fprintf(stderr, "usage: desk_runtime_bench [--triggers N] [--status-runs N] [--desks N]\n");
      return std::nullopt;
    }
    char* end = nullptr;
    *target = std::strtol(argv[++index], &end, 10);
    if (end == nullptr || *end != '\0' || *target < 1) {
      std::fprintf(stderr, "desk_runtime_bench: %s needs a count of at least 1\n", argument.c_str());
      return std::nullopt;
    }
  }
  return options;
}

// A turn runner whose turns return at once, or (with `block`) wait until released.
class BenchTurnRunner final : public desk::TurnRunner {
 public:
  explicit BenchTurnRunner(asio::io_context& context) : release_(context, asio::steady_timer::time_point::max()) {}
  // Named parameters and a named outcome: GCC 12 at -O3 miscompiled a first version with
  // unnamed parameters and `co_return TurnOutcome{"done"}` (SIGILL on its first turn).
  asio::awaitable<desk::TurnOutcome> run_turn(std::string message, desk::TurnContext& context) override {
    (void)context;
    if (block) {
      co_await release_.async_wait(asio::as_tuple(asio::use_awaitable));
      if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
        throw boost::system::system_error(asio::error::operation_aborted);
      }
    }
    desk::TurnOutcome outcome;
    outcome.reply = std::move(message);
    co_return outcome;
  }
  asio::awaitable<std::string> side_question(std::string question) override { co_return question; }
  asio::awaitable<std::string> summarise() override { co_return "summary"; }
  void resume_session(const desk::Session&) override {}
  asio::awaitable<void> close() override { co_return; }
  // Call on the io_context's thread.
  void release() {
    block = false;
    release_.cancel();
  }

  bool block = false;

 private:
  asio::steady_timer release_;
};

// The io_context on a worker thread, the bus, and the main thread's view of the events.
class Bench {
 public:
  Bench() : bus_(clock_), work_(asio::make_work_guard(context_)) {
    subscription_ = bus_.subscribe(context_.get_executor(), 4'000'000);
    thread_ = std::thread([this] { context_.run(); });
  }
  ~Bench() {
    work_.reset();
    context_.stop();
    thread_.join();
  }

  asio::io_context& context() { return context_; }
  desk::EventBus& bus() { return bus_; }
  const deskd::Clock& clock() const { return clock_; }
  std::uint64_t dropped() const { return subscription_->dropped(); }

  // Reads events until `seen` returns true for one (true), or 60 s pass (false). Spins, so
  // that an event is seen as soon as it is published.
  template <typename Predicate>
  bool wait_for(Predicate seen) {
    const auto give_up = Steady::now() + std::chrono::seconds(60);
    for (;;) {
      while (auto event = subscription_->try_next()) {
        if (seen(*event)) return true;
      }
      if (Steady::now() > give_up) return false;
      std::this_thread::yield();
    }
  }
  bool wait_for_count(const std::string& kind, long count) {
    long seen = 0;
    return wait_for([&](const desk::Event& event) { return event.kind == kind && ++seen == count; });
  }

  desk::Trigger message(const std::string& desk_name, std::string text) const {
    desk::Trigger trigger;
    trigger.id = desk::make_trigger_id();
    trigger.desk = desk_name;
    trigger.text = std::move(text);
    trigger.sender = "bench";
    trigger.received = clock_.now();
    return trigger;
  }

 private:
  deskd::SystemClock clock_;
  asio::io_context context_;
  desk::EventBus bus_;
  std::shared_ptr<desk::EventSubscription> subscription_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

// Desks running on the bench's io_context, stopped (cancelled) together.
class Desks {
 public:
  explicit Desks(Bench& bench) : bench_(bench) {}
  ~Desks() { stop(); }

  desk::DeskRuntime& add(const std::string& name, std::shared_ptr<BenchTurnRunner> runner) {
    desk::DeskSettings settings;
    settings.name = name;
    desks_.push_back(std::make_unique<desk::DeskRuntime>(bench_.context().get_executor(), std::move(settings), bench_.bus(),
                                                         std::move(runner), bench_.clock(), desk::DeskParts{}));
    signals_.push_back(std::make_unique<asio::cancellation_signal>());
    return *desks_.back();
  }
  // Starts every desk added (co_spawn run() with a cancellation slot), on the io thread.
  void start() {
    asio::post(bench_.context(), [this] {
      for (std::size_t index = 0; index < desks_.size(); ++index) {
        asio::co_spawn(bench_.context(), desks_[index]->run(),
                       asio::bind_cancellation_slot(signals_[index]->slot(), [this](std::exception_ptr) { ++ended_; }));
      }
    });
  }
  // Cancels every desk and waits (up to 60 s) until their run() ended.
  bool stop() {
    if (desks_.empty()) return true;
    asio::post(bench_.context(), [this] {
      for (auto& signal : signals_) signal->emit(asio::cancellation_type::terminal);
    });
    const auto give_up = Steady::now() + std::chrono::seconds(60);
    while (ended_.load() < desks_.size() && Steady::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool ended = ended_.load() == desks_.size();
    if (ended) {
      desks_.clear();
      signals_.clear();
    }
    return ended;
  }

 private:
  Bench& bench_;
  std::vector<std::unique_ptr<desk::DeskRuntime>> desks_;
  std::vector<std::unique_ptr<asio::cancellation_signal>> signals_;
  std::atomic<std::size_t> ended_{0};
};

// VmRSS from /proc/self/status, in KiB (-1 when unreadable).
long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

double percentile(std::vector<double> samples, double fraction) {  // nearest rank
  std::sort(samples.begin(), samples.end());
  std::size_t rank = static_cast<std::size_t>(fraction * static_cast<double>(samples.size()));
  if (static_cast<double>(rank) < fraction * static_cast<double>(samples.size())) ++rank;
  if (rank < 1) rank = 1;
  return samples[rank - 1];
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t count = samples.size();
  return count % 2 ? samples[count / 2] : (samples[count / 2 - 1] + samples[count / 2]) / 2;
}

int fail(const char* what) {
  std::printf("desk_problem=%s\n", what);
  std::fprintf(stderr, "desk_runtime_bench: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = parse_arguments(argc, argv);
  if (!options) return 2;
  Bench bench;
  std::printf("desk_parts=none (no journal, no session keeper, no tools)\n");

  // Memory per idle desk.
  long before_kib = 0, after_kib = 0;
  {
    before_kib = resident_kib();
    Desks desks(bench);
    for (long index = 0; index < options->desks; ++index) {
      std::string name = "idle-";
      name += std::to_string(index);
      desks.add(name, std::make_shared<BenchTurnRunner>(bench.context()));
    }
    desks.start();
    if (!bench.wait_for_count(desk::event_kind::kDeskStarted, options->desks)) return fail("the idle desks did not all start");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let them settle into their wait
    after_kib = resident_kib();
    if (!desks.stop()) return fail("the idle desks did not stop");
  }
  const double per_desk_kib = static_cast<double>(after_kib - before_kib) / static_cast<double>(options->desks);
  std::printf("desk_idle_desks=%ld\ndesk_rss_before_kib=%ld\ndesk_rss_after_kib=%ld\ndesk_idle_kib_per_desk=%.1f\n",
              options->desks, before_kib, after_kib, per_desk_kib);

  // Triggers per second through a desk with a no-op turn runner.
  double triggers_per_second = 0;
  {
    Desks desks(bench);
    desk::DeskRuntime& runtime = desks.add("throughput", std::make_shared<BenchTurnRunner>(bench.context()));
    desks.start();
    if (!bench.wait_for_count(desk::event_kind::kDeskStarted, 1)) return fail("the throughput desk did not start");
    const auto start = Steady::now();
    for (long index = 0; index < options->triggers; ++index) {
      if (!runtime.submit(bench.message("throughput", "hello")).ok()) return fail("a submit was refused");
    }
    if (!bench.wait_for_count(desk::event_kind::kTurnFinished, options->triggers)) return fail("not every turn finished");
    const double seconds = std::chrono::duration<double>(Steady::now() - start).count();
    triggers_per_second = static_cast<double>(options->triggers) / seconds;
    if (!desks.stop()) return fail("the throughput desk did not stop");
    std::printf("desk_triggers=%ld\ndesk_triggers_seconds=%.3f\ndesk_triggers_per_s=%.0f\n", options->triggers, seconds,
                triggers_per_second);
  }

  // /status latency while a turn runs.
  std::vector<double> latencies_us;
  {
    Desks desks(bench);
    auto runner = std::make_shared<BenchTurnRunner>(bench.context());
    runner->block = true;
    desk::DeskRuntime& runtime = desks.add("status", runner);
    desks.start();
    if (!bench.wait_for_count(desk::event_kind::kDeskStarted, 1)) return fail("the status desk did not start");
    if (!runtime.submit(bench.message("status", "long work")).ok()) return fail("a submit was refused");
    if (!bench.wait_for_count(desk::event_kind::kTurnStarted, 1)) return fail("the blocking turn did not start");
    latencies_us.reserve(static_cast<std::size_t>(options->status_runs));
    for (long index = 0; index < options->status_runs; ++index) {
      desk::Trigger trigger = bench.message("status", "/status");
      const std::string id = trigger.id;
      const auto start = Steady::now();
      if (!runtime.submit(std::move(trigger)).ok()) return fail("a submit was refused");
      const bool answered = bench.wait_for([&](const desk::Event& event) {
        if (event.kind != desk::event_kind::kCommandAnswered) return false;
        const auto* trigger_id = event.data.if_contains("trigger");
        return trigger_id != nullptr && trigger_id->is_string() && trigger_id->get_string() == id;
      });
      const auto end = Steady::now();
      if (!answered) return fail("a /status was not answered");
      latencies_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    }
    asio::post(bench.context(), [runner] { runner->release(); });
    if (!bench.wait_for_count(desk::event_kind::kTurnFinished, 1)) return fail("the released turn did not finish");
    if (!desks.stop()) return fail("the status desk did not stop");
  }
  const double status_median = median(latencies_us);
  const double status_p99 = percentile(latencies_us, 0.99);
  std::printf("desk_status_runs=%ld\ndesk_status_median_us=%.1f\ndesk_status_p99_us=%.1f\n", options->status_runs,
              status_median, status_p99);

  const std::uint64_t dropped = bench.dropped();
  std::printf("desk_events_dropped=%llu\n", static_cast<unsigned long long>(dropped));

  std::printf("# DeskRuntime, no journal and no session keeper (empty DeskParts), one io thread\n");
  std::printf("#   triggers through a no-op turn runner: %.0f triggers/s (%ld triggers)\n", triggers_per_second,
              options->triggers);
  std::printf("#   /status while a turn runs: median %.1f us, p99 %.1f us (%ld runs)\n", status_median, status_p99,
              options->status_runs);
  std::printf("#   memory per idle desk: %.1f KiB (VmRSS %ld -> %ld KiB for %ld desks)\n", per_desk_kib, before_kib,
              after_kib, options->desks);
  if (dropped != 0) return fail("the subscriber dropped events");
  return 0;
}
