#pragma once
// The one line `systemctl status deskd` shows (sd_notify STATUS=): how many desks run and,
// for those kept stopped, why, cut short so the line stays one short line.

#include <cstddef>
#include <span>
#include <string>

namespace deskd::app {

/// A desk that could not start, and why (Slot::error).
struct StoppedDesk {
  std::string name;
  std::string reason;
};

/// "starting: 3 of 10 desks running, 7 starting" while `starting` > 0; else "2 of 3 desks
/// running", with "; kept stopped: beta: REASON" for each stopped desk (at most 3 named,
/// then "and N more"; each reason on one line, cut to about 80 characters with "...").
/// Control characters become spaces: a newline would end STATUS= and start another
/// assignment of sd_notify's.
std::string service_status_line(std::size_t running, std::size_t total, std::size_t starting,
                                 std::span<const StoppedDesk> stopped);

}  // namespace deskd::app
