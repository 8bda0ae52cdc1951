#include "bench/bash_session_options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace deskd::bench {

void usage(std::FILE* stream) {
  std::fputs(
      "usage: bash_session_bench [-n RUNS] [--warmup RUNS] [--flood-bytes BYTES]\n"
      "                          [--max-growth-mb MB] [--no-round-trip] [--no-flood] [--raw FILE]\n"
      "                          [--fresh SESSIONS [--fresh-raw FILE]]\n"
      "                          [--after-restart RUNS [--think-ms MS] [--restart-raw FILE]]\n"
      "\n"
      "  -n, --runs RUNS        timed run(\"true\") round trips (default 2000)\n"
      "  --warmup RUNS          untimed round trips first (default 20)\n"
      "  --flood-bytes BYTES    size of each flood (default 200000000)\n"
      "  --max-growth-mb MB     a flood may raise the peak RSS by less than this (default 1)\n"
      "  --fresh SESSIONS       time the first run(\"true\") of this many fresh sessions, each\n"
      "                         from creating the session (sandbox, init, bash) to the outcome\n"
      "  --fresh-raw FILE       append each fresh session's time, in milliseconds, to FILE\n"
      "  --after-restart RUNS   restart the session, wait --think-ms, time the next run(\"true\")\n"
      "  --think-ms MS          the wait after each restart: the model writing its next call\n"
      "                         (default 100)\n"
      "  --restart-raw FILE     append each time after a restart, in milliseconds, to FILE\n"
      "  --no-round-trip        skip the round trips\n"
      "  --no-flood             skip the floods\n"
      "  --raw FILE             append every round trip, in microseconds, to FILE\n",
      stream);
}

namespace {

bool parse_number(const char* text, long long minimum, long long& value) {
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < minimum) return false;
  value = parsed;
  return true;
}

}  // namespace

std::optional<Options> parse_arguments(int argc, char** argv) {
  Options options;
  for (int index = 1; index < argc; ++index) {
    const std::string argument = argv[index];
    const auto next = [&]() -> const char* {
      if (index + 1 >= argc) {
        std::fprintf(stderr, "bash_session_bench: %s needs a value\n", argument.c_str());
        return nullptr;
      }
      return argv[++index];
    };
    long long number = 0;
    if (argument == "-n" || argument == "--runs") {
      const char* value = next();
      if (value == nullptr || !parse_number(value, 1, number)) return std::nullopt;
      options.runs = static_cast<long>(number);
    } else if (argument == "--warmup") {
      const char* value = next();
      if (value == nullptr || !parse_number(value, 0, number)) return std::nullopt;
      options.warmup = static_cast<long>(number);
    } else if (argument == "--flood-bytes") {
      const char* value = next();
      if (value == nullptr || !parse_number(value, 1, number)) return std::nullopt;
      options.flood_bytes = number;
    } else if (argument == "--max-growth-mb") {
      const char* value = next();
      if (value == nullptr) return std::nullopt;
      options.max_growth_mb = std::atof(value);
    } else if (argument == "--fresh") {
      const char* value = next();
      if (value == nullptr || !parse_number(value, 1, number)) return std::nullopt;
      options.fresh = static_cast<long>(number);
    } else if (argument == "--after-restart") {
      const char* value = next();
      if (value == nullptr || !parse_number(value, 1, number)) return std::nullopt;
      options.after_restart = static_cast<long>(number);
    } else if (argument == "--think-ms") {
      const char* value = next();
      if (value == nullptr || !parse_number(value, 0, number)) return std::nullopt;
      options.think_ms = static_cast<long>(number);
    } else if (argument == "--restart-raw") {
      const char* value = next();
      if (value == nullptr) return std::nullopt;
      options.restart_raw_file = value;
    } else if (argument == "--fresh-raw") {
      const char* value = next();
      if (value == nullptr) return std::nullopt;
      options.fresh_raw_file = value;
    } else if (argument == "--no-round-trip") {
      options.round_trip = false;
    } else if (argument == "--no-flood") {
      options.flood = false;
    } else if (argument == "--raw") {
      const char* value = next();
      if (value == nullptr) return std::nullopt;
      options.raw_file = value;
    } else if (argument == "-h" || argument == "--help") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "bash_session_bench: unknown argument %s\n", argument.c_str());
      return std::nullopt;
    }
  }
  return options;
}

}  // namespace deskd::bench
