#pragma once
// A desk's API ledger: <desk state folder>/ledger.jsonl, one JSON object a line for every
// step of every gated request (allowed, denied, asked, approved, timed out, answered, failed
// upstream), each line holding the SHA-256 of the line before it ("prev"): a hash chain.
// A line is written (write(2), O_APPEND) before append() returns, so a request sent upstream
// after it has its line even if deskd is killed at once; it reaches the disk by fdatasync
// soon after (a thread of the ledger's own), so a power cut may lose the last second.
// ledger.head holds the number and hash of the last line, so a removed or edited last line
// is seen too. Past kLedgerRotateBytes the file is renamed ledger-<first seq>.jsonl and a new
// one begins whose first "prev" is the old file's last hash: the chain runs on across files.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"

namespace deskd::egress {

/// One step of one gated request. Never the credential: only hashes and sizes of bodies.
struct LedgerEntry {
  std::string api;
  std::string method;
  std::string origin;   ///< "https://api.kite.trade"
  std::string path;     ///< with the query, as the desk sent it (placeholders, never keys)
  std::string rule;     ///< the rule's name; "" when none matched
  std::string outcome;  ///< allowed, denied, asked, approved, refused, timed_out, answered, failed_upstream
  int status = 0;       ///< the HTTP status the desk got (0 before one is known)
  std::uint64_t request_bytes = 0;
  std::uint64_t response_bytes = 0;
  std::string request_sha256;   ///< of the exact request the desk sent (head and body)
  std::string response_sha256;  ///< of the response body; "" before one
  std::string reason;           ///< why refused, failed, or who decided
  std::string approval;         ///< the approval id, for ask
};

inline constexpr std::uint64_t kLedgerRotateBytes = std::uint64_t{64} << 20;

class ApiLedger {
 public:
  /// Opens (creating) `folder`/ledger.jsonl, continuing the chain of what is there. A last
  /// line torn by a crash mid-write (no newline) is cut off, and repaired() says so. Refused
  /// when the last whole line cannot be read (the chain cannot be continued). Files are
  /// rotated once the current one would pass `rotate_bytes` (a parameter for the tests).
  static Result<std::shared_ptr<ApiLedger>> open(const std::filesystem::path& folder, const Clock& clock,
                                                 std::uint64_t rotate_bytes = kLedgerRotateBytes);
  /// Flushes what was written (one last fdatasync) and ends the ledger's thread.
  ~ApiLedger();

  /// Appends `entry` as one line (with "at" in India time, "seq" and "prev"). Thread-safe.
  /// A failed write leaves the chain as it was; once a flush to disk has failed, every
  /// later append is refused (an audit trail that may have lost lines must be looked at).
  Result<void> append(const LedgerEntry& entry);

  /// What open() found and mended, for the log: a torn last line cut off, a ledger.head
  /// that disagreed with the last line; "" when nothing.
  std::string repaired() const;

 private:
  struct State;
  explicit ApiLedger(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// What verifying a ledger found.
struct LedgerCheck {
  bool intact = true;
  std::uint64_t lines = 0;
  std::string problem;  ///< "ledger.jsonl:17: prev does not match line 16" (empty when intact)
};

/// Verifies the chain of every ledger file in `folder`, oldest first, against ledger.head.
Result<LedgerCheck> verify_ledger(const std::filesystem::path& folder);

/// The ledger's lines at or after `since` (all when none), newest last, at most
/// `maximum_bytes` of them (the newest kept).
Result<std::vector<std::string>> read_ledger(const std::filesystem::path& folder,
                                             std::optional<std::chrono::system_clock::time_point> since,
                                             std::size_t maximum_bytes);

}  // namespace deskd::egress
