#pragma once
// bash_session_bench's command line: what to measure and how much.

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

namespace deskd::bench {

struct Options {
  long runs = 2000;
  long warmup = 20;
  long long flood_bytes = 200000000;
  std::size_t maximum_characters = 20000;  // the seed's default for the bash tool
  double timeout_seconds = 120;            // the seed's default
  double max_growth_mb = 1;
  long fresh = 0;          // fresh sessions whose first run("true") is timed; 0: none
  long after_restart = 0;  // restarts after which the next run("true") is timed; 0: none
  long think_ms = 100;     // the pause between a restart and the next command
  bool round_trip = true;
  bool flood = true;
  std::string raw_file;
  std::string fresh_raw_file;
  std::string restart_raw_file;
};

/// The usage text.
void usage(std::FILE* stream);

/// The options, or nullopt after printing what is wrong with them; --help prints the usage
/// and exits.
std::optional<Options> parse_arguments(int argc, char** argv);

}  // namespace deskd::bench
