// Reading a desk's API ledger: verifying its chain, and the lines since a time.

#include <boost/json.hpp>

#include <algorithm>
#include <fstream>

#include "runner/egress/api_ledger.h"
#include "runner/egress/api_ledger_files.h"
#include "runner/events/india_time.h"

namespace deskd::egress {

namespace json = boost::json;
namespace files = ledger_files;

namespace {

// The ledger's files, oldest first: the rotated ones by their first seq, then ledger.jsonl
// (when there is one).
Result<std::vector<std::filesystem::path>> ledger_files_in_order(const std::filesystem::path& folder) {
  DESKD_ASSIGN_OR_RETURN(auto list, files::rotated_files(folder));
  std::error_code error;
  if (std::filesystem::exists(folder / files::kCurrentName, error)) list.push_back(folder / files::kCurrentName);
  return list;
}

struct LineFields {
  std::uint64_t seq = 0;
  std::string prev;
};

std::optional<LineFields> fields_of(std::string_view line) {
  boost::system::error_code error;
  const json::value value = json::parse(line, error);
  if (error || !value.is_object()) return std::nullopt;
  const json::object& object = value.as_object();
  const json::value* seq = object.if_contains("seq");
  const json::value* prev = object.if_contains("prev");
  if (seq == nullptr || prev == nullptr || !prev->is_string()) return std::nullopt;
  const auto number = seq->to_number<std::uint64_t>(error);
  if (error) return std::nullopt;
  return LineFields{number, std::string(prev->as_string())};
}

// "2026-11-30T09:14:05.123+05:30" (as the ledger writes "at") as a moment; nullopt otherwise.
std::optional<std::chrono::system_clock::time_point> parse_at(std::string_view text) {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.ddd+05:30";
  if (text.size() != kShape.size()) return std::nullopt;
  for (std::size_t index = 0; index < kShape.size(); ++index) {
    const bool digit = text[index] >= '0' && text[index] <= '9';
    if (kShape[index] == 'd' ? !digit : text[index] != kShape[index]) return std::nullopt;
  }
  const auto date = desk::parse_iso_date(text.substr(0, 10));
  if (!date) return std::nullopt;
  const auto number = [&](std::size_t at, std::size_t length) {
    return std::stoi(std::string(text.substr(at, length)));
  };
  return desk::india_time_point(*date, number(11, 2), number(14, 2), number(17, 2)) +
         std::chrono::milliseconds(number(20, 3));
}

std::optional<std::chrono::system_clock::time_point> at_of(std::string_view line) {
  boost::system::error_code error;
  const json::value value = json::parse(line, error);
  if (error || !value.is_object()) return std::nullopt;
  const json::value* at = value.as_object().if_contains("at");
  if (at == nullptr || !at->is_string()) return std::nullopt;
  return parse_at(at->as_string());
}

}  // namespace

Result<LedgerCheck> verify_ledger(const std::filesystem::path& folder) {
  LedgerCheck check;
  const auto problem = [&](const std::string& where, std::string what) {
    check.intact = false;
    check.problem = where + ": " + std::move(what);
    return check;
  };
  DESKD_ASSIGN_OR_RETURN(auto ordered, ledger_files_in_order(folder));
  std::uint64_t expected_seq = 1;
  std::string previous_hash = files::kNoPreviousHash;
  std::string previous_where;  // "FILE:LINE" of the line before, "" before the first
  for (const auto& path : ordered) {
    const std::string name = path.filename().string();
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error::from_errno(errno, "Cannot open the ledger file " + path.string() + ".");
    const auto named_first = files::rotated_first_seq(name);
    std::string line;
    std::uint64_t number = 0;
    while (std::getline(in, line)) {
      ++number;
      const std::string where = name + ":" + std::to_string(number);
      if (in.eof()) return problem(where, "the line has no newline — it was torn by a crash, or edited");
      const auto fields = fields_of(line);
      if (!fields) return problem(where, "not a ledger line (JSON with seq and prev) — it was damaged or edited");
      if (number == 1 && named_first && *named_first != fields->seq) {
        return problem(where, "the file's name says it begins at line " + std::to_string(*named_first) +
                                  ", but its first line is seq " + std::to_string(fields->seq) +
                                  " — a file was renamed");
      }
      if (fields->seq != expected_seq) {
        return problem(where, "seq is " + std::to_string(fields->seq) + " where " + std::to_string(expected_seq) +
                                  " was expected — a line was removed, added or moved");
      }
      if (fields->prev != previous_hash) {
        return problem(where, previous_where.empty()
                                  ? std::string("prev is not the start of a chain — lines before it were removed")
                                  : "prev does not match the hash of the line before it (" + previous_where +
                                        ") — a line was edited, removed or moved");
      }
      previous_hash = files::sha256_hex(line);
      previous_where = where;
      ++expected_seq;
      ++check.lines;
    }
  }
  // The head tells the last line: without it, removing or editing the last line would leave
  // a chain as good as any.
  std::ifstream head_file(folder / files::kHeadName, std::ios::binary);
  const std::string record((std::istreambuf_iterator<char>(head_file)), std::istreambuf_iterator<char>());
  if (!head_file && check.lines == 0) return check;  // no ledger at all: nothing to verify
  const auto head = files::parse_head_record(record);
  if (!head) return problem(std::string(files::kHeadName), "missing or damaged — the last line cannot be checked");
  if (head->seq < check.lines) {
    return problem(std::string(files::kHeadName),
                   "names line " + std::to_string(head->seq) + ", but the ledger goes on to line " +
                       std::to_string(check.lines) +
                       " — lines were added after it, or deskd stopped between writing a line and its head (a "
                       "deskd that opens the ledger again moves a head one line behind on, and says so in its log)");
  }
  if (head->seq != check.lines) {
    return problem(std::string(files::kHeadName), "names line " + std::to_string(head->seq) +
                                                      ", but the ledger ends at line " + std::to_string(check.lines) +
                                                      " — the last lines were removed (or lost to a power cut)");
  }
  if (head->sha256 != previous_hash) {
    return problem(previous_where.empty() ? std::string(files::kHeadName) : previous_where,
                   "the last line does not match the hash in ledger.head — it was edited or replaced");
  }
  return check;
}

Result<std::vector<std::string>> read_ledger(const std::filesystem::path& folder,
                                             std::optional<std::chrono::system_clock::time_point> since,
                                             std::size_t maximum_bytes) {
  DESKD_ASSIGN_OR_RETURN(auto ordered, ledger_files_in_order(folder));
  std::vector<std::string> newest_first;
  std::size_t bytes = 0;
  // From the newest line back, so that only what is shown is read: the lines are in the
  // order they were written, so the first one older than `since` ends the walk (a clock set
  // back meanwhile may hide a few older-stamped lines; verifying reads everything).
  for (auto path = ordered.rbegin(); path != ordered.rend(); ++path) {
    DESKD_ASSIGN_OR_RETURN(UniqueFd fd, files::open_for_reading(*path));
    DESKD_ASSIGN_OR_RETURN(std::uint64_t size, files::file_size(fd.get(), *path));
    files::LinesFromEnd lines(fd.get(), size);
    for (;;) {
      DESKD_ASSIGN_OR_RETURN(auto line, lines.previous());
      if (!line) break;
      if (line->empty()) continue;
      if (since) {
        const auto at = at_of(*line);
        if (at && *at < *since) return std::vector<std::string>(newest_first.rbegin(), newest_first.rend());
      }
      if (bytes + line->size() + 1 > maximum_bytes) {
        return std::vector<std::string>(newest_first.rbegin(), newest_first.rend());
      }
      bytes += line->size() + 1;
      newest_first.push_back(std::move(*line));
    }
  }
  return std::vector<std::string>(newest_first.rbegin(), newest_first.rend());
}

}  // namespace deskd::egress
