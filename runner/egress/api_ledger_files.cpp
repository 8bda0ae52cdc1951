#include "runner/egress/api_ledger_files.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <span>

#include "base/hex.h"

namespace deskd::egress::ledger_files {

namespace {

constexpr std::size_t kReadChunkBytes = 64 * 1024;
constexpr std::string_view kRotatedPrefix = "ledger-";
constexpr std::string_view kRotatedSuffix = ".jsonl";
constexpr std::size_t kSeqDigits = 12;

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool all_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // SHA-256 from the system's OpenSSL cannot fail short of a broken library: that is an
  // impossible state, not an outside failure, so it aborts rather than chain a wrong hash.
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr) != 1) std::abort();
  return hex_encode(std::span<const unsigned char>(digest, size));
}

std::string rotated_name(std::uint64_t first_seq) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%012llu", static_cast<unsigned long long>(first_seq));
  return std::string(kRotatedPrefix) + digits + std::string(kRotatedSuffix);
}

std::optional<std::uint64_t> rotated_first_seq(std::string_view file_name) {
  if (!file_name.starts_with(kRotatedPrefix) || !file_name.ends_with(kRotatedSuffix)) return std::nullopt;
  const std::string_view digits =
      file_name.substr(kRotatedPrefix.size(), file_name.size() - kRotatedPrefix.size() - kRotatedSuffix.size());
  if (digits.size() != kSeqDigits || !all_digits(digits)) return std::nullopt;
  return std::stoull(std::string(digits));
}

Result<std::vector<std::filesystem::path>> rotated_files(const std::filesystem::path& folder) {
  std::error_code error;
  std::map<std::uint64_t, std::filesystem::path> by_seq;
  std::filesystem::directory_iterator entries(folder, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return std::vector<std::filesystem::path>{};
    return Error::from_errno(error.value(), "Cannot list the ledger folder " + folder.string() + ".");
  }
  for (const auto& entry : entries) {
    if (auto seq = rotated_first_seq(entry.path().filename().native())) by_seq[*seq] = entry.path();
  }
  std::vector<std::filesystem::path> files;
  for (auto& [seq, path] : by_seq) files.push_back(std::move(path));
  return files;
}

std::string format_head_record(const HeadRecord& head) {
  char text[64];
  std::snprintf(text, sizeof text, "%020llu ", static_cast<unsigned long long>(head.seq));
  std::string record = text + head.sha256;
  record += ' ' + sha256_hex(record).substr(0, 16) + '\n';
  return record;
}

std::optional<HeadRecord> parse_head_record(std::string_view bytes) {
  if (bytes.size() != kHeadRecordBytes || bytes[20] != ' ' || bytes[85] != ' ' || bytes.back() != '\n') {
    return std::nullopt;
  }
  const std::string_view seq = bytes.substr(0, 20), hash = bytes.substr(21, 64), check = bytes.substr(86, 16);
  if (!all_digits(seq) || !all_hex(hash) || sha256_hex(bytes.substr(0, 85)).substr(0, 16) != check) {
    return std::nullopt;
  }
  return HeadRecord{std::stoull(std::string(seq)), std::string(hash)};
}

Result<std::optional<std::string>> LinesFromEnd::previous() {
  const auto read_chunk = [this]() -> Result<void> {
    const std::uint64_t count = std::min<std::uint64_t>(kReadChunkBytes, unread_);
    std::string chunk(count, '\0');
    std::size_t got = 0;
    while (got < count) {
      const ssize_t read = retry_on_eintr(
          [&] { return ::pread(fd_, chunk.data() + got, count - got, static_cast<off_t>(unread_ - count + got)); });
      if (read < 0) return Error::from_errno(errno, "Cannot read the ledger.");
      if (read == 0) return Error::make(ErrorCode::system, "The ledger became shorter while it was read.");
      got += static_cast<std::size_t>(read);
    }
    unread_ -= count;
    buffer_.insert(0, chunk);
    return success();
  };
  if (done_) return std::optional<std::string>{};
  if (!started_) {
    started_ = true;
    if (unread_ > 0) DESKD_RETURN_IF_ERROR(read_chunk());
    if (buffer_.empty()) {
      done_ = true;
      return std::optional<std::string>{};
    }
    if (buffer_.back() == '\n') buffer_.pop_back();  // the last line's own newline
  }
  for (;;) {
    if (const auto newline = buffer_.rfind('\n'); newline != std::string::npos) {
      std::string line = buffer_.substr(newline + 1);
      buffer_.resize(newline);
      return std::optional<std::string>(std::move(line));
    }
    if (unread_ == 0) {
      done_ = true;
      return std::optional<std::string>(std::move(buffer_));
    }
    DESKD_RETURN_IF_ERROR(read_chunk());
  }
}

Result<UniqueFd> open_for_reading(const std::filesystem::path& file) {
  UniqueFd fd(retry_on_eintr([&] { return ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW); }));
  if (!fd) {
    if (errno == ENOENT) return Error::make(ErrorCode::not_found, "There is no " + file.string() + ".");
    return Error::from_errno(errno, "Cannot open the ledger file " + file.string() + ".");
  }
  return fd;
}

Result<std::uint64_t> file_size(int fd, const std::filesystem::path& file) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return Error::from_errno(errno, "Cannot stat the ledger file " + file.string() + ".");
  return static_cast<std::uint64_t>(status.st_size);
}

Result<bool> ends_with_newline(int fd, std::uint64_t size, const std::filesystem::path& file) {
  if (size == 0) return true;
  char last = 0;
  if (retry_on_eintr([&] { return ::pread(fd, &last, 1, static_cast<off_t>(size - 1)); }) != 1) {
    return Error::from_errno(errno, "Cannot read the end of the ledger file " + file.string() + ".");
  }
  return last == '\n';
}

}  // namespace deskd::egress::ledger_files
