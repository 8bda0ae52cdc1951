// The commands that read the desk's parts: /agents (its subagents), /tools (its tools and
// what each may touch), /approvals (its API calls waiting for a person) and /journal [N]
// [KIND] (its last journal entries, readable). They only read, so they are answered beside a
// running turn.

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "runner/desk/desk_core.h"
#include "runner/desk/subagent_board.h"
#include "runner/events/event_text.h"
#include "runner/journal/journal.h"
#include "runner/journal/journal_tail.h"

namespace deskd::desk {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kDefaultJournalEntries = 20;
constexpr std::size_t kMaximumJournalEntries = 200;
// A reply is one event on the bus and one line in the journal: bounded, however long the
// entries (an earlier /journal answer among them).
constexpr std::size_t kMaximumEntryCharacters = 2000;
constexpr std::size_t kMaximumJournalReplyBytes = 64 * 1024;

struct JournalQuery {
  std::size_t count = kDefaultJournalEntries;
  std::string kind;
};

Result<JournalQuery> parse_journal_query(const std::string& arguments) {
  JournalQuery query;
  std::istringstream words(arguments);
  bool counted = false;
  for (std::string word; words >> word;) {
    if (!counted && std::all_of(word.begin(), word.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
      if (word.size() > 3 || std::stoul(word) == 0 || std::stoul(word) > kMaximumJournalEntries) {
        return Error::make(ErrorCode::invalid_argument,
                           "N must be a number from 1 to " + std::to_string(kMaximumJournalEntries) + ".");
      }
      query.count = std::stoul(word);
      counted = true;
    } else if (query.kind.empty() && find_event_kind(word)) {
      query.kind = word;
    } else {
      std::string kinds;
      for (const EventKindInfo& row : event_kinds()) kinds += (kinds.empty() ? "" : ", ") + std::string(row.name);
      return Error::make(ErrorCode::invalid_argument, "Use /journal [N] [KIND]; '" + word.substr(0, 60) +
                                                          "' is neither a count nor a kind (" + kinds + ").");
    }
  }
  return query;
}

std::string journal_text(const std::filesystem::path& path, const JournalQuery& query) {
  const PastEvents past = read_recent_events({path}, query.count, 4 * 1024 * 1024, query.kind);
  if (past.events.empty()) {
    return query.kind.empty() ? std::string("The journal holds no events yet.")
                              : "The journal's recent part holds no " + query.kind + " event.";
  }
  std::string text = "The last " + std::to_string(past.events.size()) + (query.kind.empty() ? "" : " " + query.kind) +
                     " journal entries, oldest first:\n";
  std::vector<std::string> entries;
  std::size_t bytes = text.size();
  // Newest first until the reply is full, then in their order.
  for (auto event = past.events.rbegin(); event != past.events.rend(); ++event) {
    std::string entry = event->id + " " + event_text(to_json(*event), true);
    if (entry.size() > kMaximumEntryCharacters) entry = entry.substr(0, kMaximumEntryCharacters) + " ...\n";
    if (bytes + entry.size() > kMaximumJournalReplyBytes) {
      text += "(older entries left out: the reply is full)\n";
      break;
    }
    bytes += entry.size();
    entries.push_back(std::move(entry));
  }
  for (auto entry = entries.rbegin(); entry != entries.rend(); ++entry) text += *entry;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The file is read on the desk's worker, off the loop every desk shares.
asio::awaitable<std::string> read_journal(std::filesystem::path path, JournalQuery query,
                                          asio::any_io_executor worker) {
  auto job = [path, query]() -> asio::awaitable<std::string> { co_return journal_text(path, query); };
  co_return co_await asio::co_spawn(worker, std::move(job), asio::use_awaitable);
}

}  // namespace

std::string agents_text(const DeskCore& core) {
  if (core.parts.subagents == nullptr) return "This desk runs no subagents.";
  return core.parts.subagents->describe(core.clock.now());
}

std::string tools_text(const DeskCore& core) {
  if (core.parts.tools_text.empty()) return "This desk has no tools.";
  return core.parts.tools_text;
}

std::string approvals_text(const DeskCore& core) {
  if (!core.parts.approvals_text) return "This desk has no API gate, so nothing waits for approval.";
  return core.parts.approvals_text();
}

void answer_journal(DeskCore& core, const Trigger& trigger, const std::string& arguments) {
  auto query = parse_journal_query(arguments);
  if (!query.ok()) {
    core.answer(trigger, "/journal", query.error().what);
    return core.finish(trigger);
  }
  if (core.parts.journal == nullptr || !core.worker) {
    core.answer(trigger, "/journal", "This desk keeps no journal.");
    return core.finish(trigger);
  }
  answer_beside(core, trigger, "/journal",
                read_journal(core.parts.journal->path(), *query, core.worker->get_executor()),
                "The journal could not be read: ");
}

}  // namespace deskd::desk
