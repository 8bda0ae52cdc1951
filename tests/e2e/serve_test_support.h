#pragma once
// What the `deskd serve` end-to-end test files share: a turn that is still running whenever
// a test looks, small readers of deskctl's output and of events, and the test fixture.

#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"

namespace deskd::e2e {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// A turn that runs a long command: it is still running whenever the test looks.
inline constexpr const char* kLongTurn =
    R"({"steps": [{"text": "waiting", "tool_calls": [{"name": "bash", "input": {"command": "echo started; sleep 30"}}]}, {"text": "done waiting"}]})"
    "\n";

inline std::chrono::milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

inline std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

inline json::object parsed(const std::string& text) {
  boost::system::error_code error;
  json::value value = json::parse(text, error);
  return !error && value.is_object() ? value.as_object() : json::object{};
}

inline std::string field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr) return {};
  return value->is_string() ? std::string(value->as_string()) : json::serialize(*value);
}

inline std::string describe(const DeskctlResult& result) {
  return "exit " + std::to_string(result.exit_code) + "\nstdout:\n" + result.output + "\nstderr:\n" + result.error_output;
}

// Index of the first event at or after `from` matching `wanted`; events.size() when none.
inline std::size_t find_event(const std::vector<json::object>& events,
                              const std::function<bool(const json::object&)>& wanted, std::size_t from = 0) {
  for (std::size_t index = from; index < events.size(); ++index) {
    if (wanted(events[index])) return index;
  }
  return events.size();
}

// The value of the one sample line `series` (name and labels, exactly) of Prometheus text
// (`deskctl metrics`), or -1 when there is none.
inline double sample_of(const std::string& text, const std::string& series) {
  const std::string start = "\n" + series + " ";
  const std::size_t at = text.find(start);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + start.size(), text.find('\n', at + start.size()) - at - start.size()));
}

class ServeE2eTest : public ::testing::Test {
 protected:
  static void start(ServeDaemon& daemon, const std::vector<std::string>& environment = {}) {
    std::string why;
    ASSERT_TRUE(daemon.start(environment, &why)) << why;
  }
};

}  // namespace deskd::e2e
