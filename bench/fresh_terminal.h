#pragma once
// What a desk waits for when its terminal is new, for bench/fresh_bash: a new session's
// first command (the whole sandbox, init and bash on the critical path), the next command
// after a restart (the session prepares the next terminal in the background), and how long
// the event loop was held while terminals started (the launch waits for the sandbox's
// set-up without blocking it).

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "runner/tools/bash_session.h"
#include "sandbox/sandbox_spec.h"

namespace deskd::bench {

struct FreshTimes {
  std::vector<double> milliseconds;  ///< one sample per fresh terminal
  // How late the event loop woke while terminals started (and the command ran), and while
  // old ones were stopped: per step, the latest wake-up; of those, the median and the most.
  double median_start_stall_ms = 0;
  double longest_start_stall_ms = 0;
  double median_stop_stall_ms = 0;
  double longest_stop_stall_ms = 0;
  std::string problem;               ///< set when a command failed: the samples are not valid
};

/// `count` new sessions on `spec`, each timed from its creation to its first run("true")'s
/// outcome.
boost::asio::awaitable<FreshTimes> time_fresh_sessions(const sandbox::SandboxSpec& spec, long count,
                                                       double timeout_seconds, std::size_t maximum_characters);

/// `count` times: restart `session`, let `think` pass (the model writing its next call), then
/// time run("true").
boost::asio::awaitable<FreshTimes> time_after_restart(tools::BashSession& session, long count,
                                                      std::chrono::milliseconds think);

}  // namespace deskd::bench
