#pragma once
// The last events of the desks' journals, read from their ends: a restarted daemon numbers
// its events on from the highest id they hold (so "events after e-22" means the same
// before and after a restart) and shows them again as recent history. Reading from the end
// keeps this quick however long a journal has grown.

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "runner/events/event.h"

namespace deskd::desk {

struct PastEvents {
  std::uint64_t highest_event_number = 0;  ///< 0 when no journal holds a numbered event
  std::vector<Event> events;               ///< the newest `count`, in the order of their ids
};

/// The journals of <desks_folder>/<desk>/journal.jsonl, for every desk folder there.
std::vector<std::filesystem::path> journals_under(const std::filesystem::path& desks_folder);

/// Reads up to `count` well-formed events, and at most `maximum_bytes`, from the end of
/// each journal (missing and unreadable ones are passed over: the desks' own recovery
/// reports them) and keeps the newest `count` of them all; only events of `only_kind` when
/// it is not empty.
PastEvents read_recent_events(const std::vector<std::filesystem::path>& journals, std::size_t count,
                              std::uint64_t maximum_bytes = 4 * 1024 * 1024, std::string_view only_kind = {});

}  // namespace deskd::desk
