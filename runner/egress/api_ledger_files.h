#pragma once
// Private to runner/egress/: what the ledger's writer (api_ledger.cpp) and its readers
// (api_ledger_reading.cpp) agree on — the files' names, the hash of a line, the head record,
// and reading a file's lines from its end.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace deskd::egress::ledger_files {

inline constexpr std::string_view kCurrentName = "ledger.jsonl";
inline constexpr std::string_view kHeadName = "ledger.head";
/// The "prev" of the very first line.
inline const std::string kNoPreviousHash(64, '0');

/// Hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

/// "ledger-000000000017.jsonl": the rotated file whose first line is `first_seq`.
std::string rotated_name(std::uint64_t first_seq);
/// The first seq a rotated file's name tells, or nullopt for any other name.
std::optional<std::uint64_t> rotated_first_seq(std::string_view file_name);
/// The rotated files of `folder`, oldest (lowest first seq) first.
Result<std::vector<std::filesystem::path>> rotated_files(const std::filesystem::path& folder);

/// The last line's number and hash, as ledger.head holds them.
struct HeadRecord {
  std::uint64_t seq = 0;
  std::string sha256;
};
/// Exactly kHeadRecordBytes: "SEQ(20 digits) SHA256(64 hex) CHECK(16 hex)\n", CHECK being
/// the start of the SHA-256 of what precedes it — so a torn or edited record is told from a
/// true one, and is never misread as another seq or hash.
inline constexpr std::size_t kHeadRecordBytes = 20 + 1 + 64 + 1 + 16 + 1;
std::string format_head_record(const HeadRecord& head);
/// The record, or nullopt when it is not one (wrong size, torn, edited).
std::optional<HeadRecord> parse_head_record(std::string_view bytes);

/// Reads a file's lines from its end, a chunk at a time, so that only what is wanted is read.
class LinesFromEnd {
 public:
  /// `fd` open for reading; `size` the file's size (lines beyond it are not seen).
  LinesFromEnd(int fd, std::uint64_t size) : fd_(fd), unread_(size) {}
  /// The line before the one last returned (without its newline); nullopt at the start of
  /// the file, or an error when reading failed. A last line without a newline (torn) comes
  /// first like any other; use ends_with_newline() to tell.
  Result<std::optional<std::string>> previous();

 private:
  int fd_;
  std::uint64_t unread_;  ///< bytes before `buffer_` not yet read
  std::string buffer_;    ///< read but not yet returned
  bool started_ = false;
  bool done_ = false;
};

/// Opens `file` for reading (never through a link); not_found when it is absent.
Result<UniqueFd> open_for_reading(const std::filesystem::path& file);
/// The size of the open file.
Result<std::uint64_t> file_size(int fd, const std::filesystem::path& file);
/// Whether the open file, of `size` bytes, is empty or ends with a newline.
Result<bool> ends_with_newline(int fd, std::uint64_t size, const std::filesystem::path& file);

}  // namespace deskd::egress::ledger_files
