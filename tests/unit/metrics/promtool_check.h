#pragma once
// Runs Debian's `promtool check metrics` (package prometheus, installed by
// `scripts/setup test`) on a text: Prometheus' own parser and linter, so that what deskd
// serves is read by the real thing, not by our idea of the format.

#include <string>

namespace deskd::metrics {

struct PromtoolVerdict {
  bool ran = false;      ///< promtool was found and ran
  int exit_status = -1;  ///< 0: parsed, no lint problems
  std::string output;    ///< what it printed (its problems)
};

PromtoolVerdict promtool_check_metrics(const std::string& text);

}  // namespace deskd::metrics
