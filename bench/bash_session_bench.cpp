// bash_session_bench: deskd's BashSession, measured. bench/bash_session runs it next to the
// Python seed (bench/python_seed_session.py) and `bash -c true` forked per command
// (bench/fork_true). See bench/README.md.
//
// It makes a temporary desk under /var/tmp (removed at the end), starts one sandboxed
// session on it, and measures:
//   - the warm round trip: after --warmup untimed `run("true")`, --runs timed ones, each
//     from just before `co_await run("true")` to just after it returns (steady_clock);
//   - two floods of --flood-bytes bytes through a session with the default limit of 20,000
//     characters, one without newlines and one with: the time from sending the command to
//     the outcome, and how far the process's peak RSS (VmHWM) rose above its RSS at the
//     start, after resetting the peak with `echo 5 > /proc/self/clear_refs`.
//
// Prints key=value lines (deskd_...) on stdout, then a summary for people (lines starting
// with '#'). Exits 1 when a command fails, a flood's output is not what was printed, or a
// flood raised the peak RSS by --max-growth-mb or more; 2 on a bad argument.

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "policy/confinement.h"
#include "bench/bash_session_options.h"
#include "bench/fresh_terminal.h"
#include "bench/temporary_desk.h"
#include "runner/tools/bash_session.h"
#include "sandbox/desk_preparation.h"
#include "sandbox/sandbox_spec.h"

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using deskd::tools::BashSession;
using deskd::tools::CommandOutcome;
using Clock = std::chrono::steady_clock;
using deskd::bench::Options;
using deskd::bench::parse_arguments;
using deskd::bench::usage;
using deskd::bench::TemporaryDesk;

// One field of /proc/self/status, in kB ("VmHWM", "VmRSS").
long status_kb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

// Resets the peak RSS (VmHWM) to the current RSS.
bool reset_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

struct Statistics {
  double median = 0;
  double p90 = 0;
  double minimum = 0;
  double mean = 0;
};

// The median, and the 90th percentile by nearest rank, as bench/cold_start computes them.
Statistics statistics(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t count = samples.size();
  Statistics result;
  result.median = count % 2 ? samples[count / 2] : (samples[count / 2 - 1] + samples[count / 2]) / 2;
  const std::size_t rank = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(count))));
  result.p90 = samples[rank - 1];
  result.minimum = samples.front();
  double sum = 0;
  for (double sample : samples) sum += sample;
  result.mean = sum / static_cast<double>(count);
  return result;
}

struct FloodResult {
  std::string name;
  std::string command;
  double seconds = 0;
  double megabytes_per_second = 0;
  double cpu_seconds = 0;  // this process's user + system time during the flood: load-independent
  long rss_start_kb = 0;
  long peak_kb = 0;
  long growth_kb = 0;
  bool peak_reset = false;
  CommandOutcome outcome;
  std::string problem;  // empty when the outcome is what was printed
};

template <typename T>
T wait(asio::io_context& context, asio::awaitable<T> operation) {
  auto future = asio::co_spawn(context, std::move(operation), asio::use_future);
  context.restart();
  context.run();
  return future.get();
}

asio::awaitable<std::vector<double>> time_round_trips(BashSession& session, long warmup, long runs, std::string& problem) {
  for (long run = 0; run < warmup; ++run) {
    const CommandOutcome outcome = co_await session.run("true");
    if (outcome.exit_status != 0) {
      problem = "a warm-up run(\"true\") failed: " + outcome.output;
      co_return std::vector<double>{};
    }
  }
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(runs));
  for (long run = 0; run < runs; ++run) {
    const auto start = Clock::now();
    const CommandOutcome outcome = co_await session.run("true");
    const auto end = Clock::now();
    if (outcome.exit_status != 0 || !outcome.output.empty()) {
      problem = "run(\"true\") did not give status 0 and no output: " + outcome.output;
      co_return std::vector<double>{};
    }
    samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  co_return samples;
}

asio::awaitable<FloodResult> flood(BashSession& session, std::string name, std::string command, long long bytes,
                                   std::size_t maximum_characters, char first_character) {
  FloodResult result;
  result.name = std::move(name);
  result.command = std::move(command);
  result.peak_reset = reset_peak_rss();
  result.rss_start_kb = status_kb(result.peak_reset ? "VmHWM" : "VmRSS");
  const auto cpu_now = [] {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  };
  const double cpu_start = cpu_now();
  const auto start = Clock::now();
  result.outcome = co_await session.run(result.command);
  const auto end = Clock::now();
  result.cpu_seconds = cpu_now() - cpu_start;
  result.peak_kb = status_kb("VmHWM");
  result.growth_kb = result.peak_kb - result.rss_start_kb;
  result.seconds = std::chrono::duration<double>(end - start).count();
  result.megabytes_per_second = static_cast<double>(bytes) / 1e6 / result.seconds;

  // The outcome must be what was printed: status 0, cut to the limit, the note counting
  // every character left out (all of them ASCII, so characters = bytes).
  const std::string& output = result.outcome.output;
  const std::size_t marker = output.find("\n[... ");
  if (result.outcome.exit_status != 0) {
    result.problem = "exit status is not 0: " + output.substr(0, 300);
  } else if (!result.outcome.truncated) {
    result.problem = "the outcome is not marked truncated";
  } else if (output.size() > maximum_characters) {
    result.problem = "the output has " + std::to_string(output.size()) + " characters, over the limit";
  } else if (output.empty() || output[0] != first_character || marker == std::string::npos) {
    result.problem = "the output does not look like the flood: " + output.substr(0, 120);
  } else {
    const long long left_out = std::atoll(output.c_str() + marker + 6);
    const std::size_t note_end = output.find("characters left out ...]\n", marker);
    const long long kept = note_end == std::string::npos
                               ? -1
                               : static_cast<long long>(marker + (output.size() - (note_end + 25)));
    if (kept < 0 || kept + left_out != bytes) {
      result.problem = "kept " + std::to_string(kept) + " + left out " + std::to_string(left_out) +
                       " characters is not the " + std::to_string(bytes) + " printed";
    }
  }
  co_return result;
}

// Whether the flood raised the peak RSS by less than --max-growth-mb (MB = 10^6 bytes; the
// kB of /proc/self/status are KiB).
bool bounded(const FloodResult& result, const Options& options) {
  return static_cast<double>(result.growth_kb) * 1024 < options.max_growth_mb * 1e6;
}

void print_flood(const FloodResult& result, const Options& options) {
  const std::string prefix = "deskd_flood_" + result.name + "_";
  std::printf("%scommand=%s\n", prefix.c_str(), result.command.c_str());
  std::printf("%sbytes=%lld\n", prefix.c_str(), options.flood_bytes);
  std::printf("%sseconds=%.3f\n", prefix.c_str(), result.seconds);
  std::printf("%smb_per_s=%.1f\n", prefix.c_str(), result.megabytes_per_second);
  std::printf("%scpu_ms=%.1f\n", prefix.c_str(), result.cpu_seconds * 1e3);
  std::printf("%smb_per_cpu_s=%.1f\n", prefix.c_str(), static_cast<double>(options.flood_bytes) / 1e6 / result.cpu_seconds);
  std::printf("%srss_start_kb=%ld\n", prefix.c_str(), result.rss_start_kb);
  std::printf("%speak_rss_kb=%ld\n", prefix.c_str(), result.peak_kb);
  std::printf("%speak_rss_growth_kb=%ld\n", prefix.c_str(), result.growth_kb);
  std::printf("%speak_reset=%s\n", prefix.c_str(), result.peak_reset ? "yes" : "no");
  std::printf("%sexit_status=%d\n", prefix.c_str(), result.outcome.exit_status.value_or(-1));
  std::printf("%soutput_characters=%zu\n", prefix.c_str(), result.outcome.output.size());
  std::printf("%struncated=%s\n", prefix.c_str(), result.outcome.truncated ? "yes" : "no");
  std::printf("%soutput_ok=%s\n", prefix.c_str(), result.problem.empty() ? "yes" : "no");
  std::printf("%sbounded=%s\n", prefix.c_str(), bounded(result, options) ? "yes" : "no");
}

// A flood file of `bytes` bytes, `pattern` repeated (and cut at the end), readable by the
// sandbox's identity.
bool write_flood_file(const fs::path& path, long long bytes, std::string_view pattern) {
  std::string chunk;
  while (chunk.size() < (std::size_t{1} << 20)) chunk += pattern;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  for (long long left = bytes; left > 0 && file;) {
    const auto part = static_cast<std::size_t>(std::min<long long>(left, static_cast<long long>(chunk.size())));
    file.write(chunk.data(), static_cast<std::streamsize>(part));
    left -= static_cast<long long>(part);
  }
  file.close();
  std::error_code error;
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
                  error);
  return file.good() && !error;
}

int run_benchmark(const Options& options) {
  TemporaryDesk desk;
  auto confinement = deskd::policy::Confinement::create(desk.desk(), {});
  if (!confinement.ok()) {
    std::fprintf(stderr, "bash_session_bench: the desk: %s\n", confinement.error().what.c_str());
    return 1;
  }
  auto spec = deskd::sandbox::SandboxSpecBuilder(*confinement).build();
  if (!spec.ok()) {
    std::fprintf(stderr, "bash_session_bench: the sandbox: %s\n", spec.error().what.c_str());
    return 1;
  }
  if (auto prepared = deskd::sandbox::prepare_desk_for_sandbox(*spec); !prepared.ok()) {
    std::fprintf(stderr, "bash_session_bench: preparing the desk: %s\n", prepared.error().what.c_str());
    return 1;
  }

  asio::io_context context;
  BashSession session(context.get_executor(), *spec, options.timeout_seconds, options.maximum_characters);
  int status = 0;
  std::printf("deskd_uid=%d\n", static_cast<int>(::getuid()));
  std::printf("deskd_maximum_output_characters=%zu\n", options.maximum_characters);

  // Starting the sandbox, once, so that neither measurement includes it.
  {
    const auto start = Clock::now();
    const CommandOutcome first = wait(context, session.run("true"));
    const double milliseconds = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (first.exit_status != 0) {
      std::fprintf(stderr, "bash_session_bench: the session does not run `true`: %s\n", first.output.c_str());
      return 1;
    }
    std::printf("deskd_first_run_ms=%.3f\n", milliseconds);
  }

  // A desk's fresh bash: a new session's first command, and the next command after a
  // restart (the session has prepared the next terminal meanwhile).
  const auto report_fresh = [&](const char* name, long count, const deskd::bench::FreshTimes& times,
                                const std::string& raw_file) {
    if (!times.problem.empty()) {
      std::fprintf(stderr, "bash_session_bench: %s\n", times.problem.c_str());
      return false;
    }
    if (!raw_file.empty()) {
      std::ofstream raw(raw_file, std::ios::app);
      for (double sample : times.milliseconds) raw << sample << "\n";
    }
    const Statistics fresh_statistics = statistics(times.milliseconds);
    std::printf("deskd_%s_runs=%ld\n", name, count);
    std::printf("deskd_%s_median_ms=%.3f\n", name, fresh_statistics.median);
    std::printf("deskd_%s_p90_ms=%.3f\n", name, fresh_statistics.p90);
    std::printf("deskd_%s_start_stall_ms=%.3f\n", name, times.median_start_stall_ms);
    std::printf("deskd_%s_start_stall_max_ms=%.3f\n", name, times.longest_start_stall_ms);
    std::printf("deskd_%s_stop_stall_ms=%.3f\n", name, times.median_stop_stall_ms);
    std::printf("deskd_%s_stop_stall_max_ms=%.3f\n", name, times.longest_stop_stall_ms);
    return true;
  };
  if (options.fresh > 0 &&
      !report_fresh("fresh", options.fresh,
                    wait(context, deskd::bench::time_fresh_sessions(*spec, options.fresh, options.timeout_seconds,
                                                                    options.maximum_characters)),
                    options.fresh_raw_file)) {
    return 1;
  }
  if (options.after_restart > 0 &&
      !report_fresh("after_restart", options.after_restart,
                    wait(context, deskd::bench::time_after_restart(session, options.after_restart,
                                                                   std::chrono::milliseconds(options.think_ms))),
                    options.restart_raw_file)) {
    return 1;
  }

  std::optional<Statistics> round_trip;
  if (options.round_trip) {
    std::string problem;
    const std::vector<double> samples = wait(context, time_round_trips(session, options.warmup, options.runs, problem));
    if (!problem.empty()) {
      std::fprintf(stderr, "bash_session_bench: %s\n", problem.c_str());
      return 1;
    }
    if (!options.raw_file.empty()) {
      std::ofstream raw(options.raw_file, std::ios::app);
      char line[64];
      for (double sample : samples) {
        std::snprintf(line, sizeof line, "%.3f\n", sample);
        raw << line;
      }
      if (!raw) {
        std::fprintf(stderr, "bash_session_bench: cannot write %s\n", options.raw_file.c_str());
        return 1;
      }
    }
    round_trip = statistics(samples);
    std::printf("deskd_round_trip_runs=%ld\n", options.runs);
    std::printf("deskd_round_trip_warmup=%ld\n", options.warmup);
    std::printf("deskd_round_trip_median_us=%.1f\n", round_trip->median);
    std::printf("deskd_round_trip_p90_us=%.1f\n", round_trip->p90);
    std::printf("deskd_round_trip_min_us=%.1f\n", round_trip->minimum);
    std::printf("deskd_round_trip_mean_us=%.1f\n", round_trip->mean);
  }

  std::vector<FloodResult> floods;
  if (options.flood) {
    const std::string bytes = std::to_string(options.flood_bytes);
    floods.push_back(wait(context, flood(session, "nonl", "head -c " + bytes + " /dev/zero | tr '\\0' x",
                                         options.flood_bytes, options.maximum_characters, 'x')));
    floods.push_back(wait(context, flood(session, "lines", "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c " + bytes,
                                         options.flood_bytes, options.maximum_characters, '0')));
    // The same two shapes read from files made beforehand (untimed, by this process, in the
    // desk folder that the sandbox sees read-only; so in the page cache): on a small machine
    // `tr` and `yes | head` make bytes slower than a session takes them, and these runs time
    // the session rather than its producer.
    if (!write_flood_file(desk.desk() / ".flood_nonl", options.flood_bytes, "x") ||
        !write_flood_file(desk.desk() / ".flood_lines", options.flood_bytes, "0123456789abcdefghijklmnopqrstuvwxyz\n")) {
      std::fprintf(stderr, "bash_session_bench: cannot write the flood files in %s\n", desk.desk().c_str());
      status = 1;
    } else {
      floods.push_back(wait(context, flood(session, "nonl_file", "cat .flood_nonl", options.flood_bytes,
                                           options.maximum_characters, 'x')));
      floods.push_back(wait(context, flood(session, "lines_file", "cat .flood_lines", options.flood_bytes,
                                           options.maximum_characters, '0')));
    }
    std::error_code ignored;
    fs::remove(desk.desk() / ".flood_nonl", ignored);
    fs::remove(desk.desk() / ".flood_lines", ignored);
    for (const FloodResult& result : floods) {
      print_flood(result, options);
      if (!result.problem.empty()) {
        std::fprintf(stderr, "bash_session_bench: flood %s: %s\n", result.name.c_str(), result.problem.c_str());
        status = 1;
      }
      if (!bounded(result, options)) status = 1;
    }
    // The session is still usable after the floods.
    const CommandOutcome after = wait(context, session.run("echo after"));
    std::printf("deskd_after_flood_ok=%s\n", after.output == "after\n" && after.exit_status == 0 ? "yes" : "no");
    if (after.output != "after\n") status = 1;
  }
  wait(context, session.close());

  std::printf("# deskd BashSession (sandboxed, uid %d), limit %zu characters\n", static_cast<int>(::getuid()),
              options.maximum_characters);
  if (round_trip) {
    std::printf("#   run(\"true\") round trip, %ld runs after %ld warm-up: median %.1f us, p90 %.1f us (min %.1f)\n",
                options.runs, options.warmup, round_trip->median, round_trip->p90, round_trip->minimum);
  }
  for (const FloodResult& result : floods) {
    std::printf("#   flood %-5s %lld bytes in %.3f s = %.1f MB/s, deskd's CPU %.1f ms = %.0f MB per CPU second; peak RSS +%.2f MB (%ld -> %ld kB)%s%s\n",
                result.name.c_str(), options.flood_bytes, result.seconds, result.megabytes_per_second,
                result.cpu_seconds * 1e3, static_cast<double>(options.flood_bytes) / 1e6 / result.cpu_seconds,
                static_cast<double>(result.growth_kb) * 1024 / 1e6, result.rss_start_kb, result.peak_kb,
                bounded(result, options) ? ", bounded" : ", NOT BOUNDED",
                result.problem.empty() ? "" : (", WRONG OUTPUT: " + result.problem).c_str());
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = parse_arguments(argc, argv);
  if (!options) {
    usage(stderr);
    return 2;
  }
  try {
    const int status = run_benchmark(*options);
    std::fflush(stdout);
    return status;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bash_session_bench: %s\n", error.what());
    return 1;
  }
}
