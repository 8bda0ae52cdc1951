#include "runner/tools/proposal_store.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <tuple>

#include "base/hex.h"
#include "base/random_id.h"
#include "base/unique_fd.h"
#include "base/utf8_text.h"
#include "policy/path_resolution.h"
#include "policy/safe_file.h"
#include "runner/tools/unified_diff.h"

namespace deskd::tools {
namespace {

constexpr std::string_view kIdPrefix = "p-";
constexpr std::size_t kIdHexDigits = 12;
constexpr std::string_view kFileSuffix = ".json";
// A stored proposal holds its content, a diff of about the same size, and JSON escapes.
constexpr std::size_t kMaximumStoredBytes = 8 * kMaximumProposalContentBytes;
constexpr std::string_view kBinaryDiff = "(the current file is not text; no diff shown)";

bool is_proposal_id(std::string_view id) {
  if (id.size() != kIdPrefix.size() + kIdHexDigits || !id.starts_with(kIdPrefix)) return false;
  return std::all_of(id.begin() + static_cast<std::ptrdiff_t>(kIdPrefix.size()), id.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string random_id() { return std::string(kIdPrefix) + random_hex(kIdHexDigits / 2); }

Error no_such_proposal(std::string_view id) {
  return Error::make(ErrorCode::not_found,
                     "There is no proposal " + policy::printable_path(id) + ".");
}

std::string to_json(const Proposal& proposal) {
  boost::json::object object;
  object["id"] = proposal.id;
  object["desk"] = proposal.desk;
  object["path"] = proposal.path;
  object["reason"] = proposal.reason;
  object["diff"] = proposal.diff;
  object["content"] = proposal.content;
  object["time"] = proposal.time;
  object["status"] = proposal.status;
  object["base"] = proposal.base;
  return boost::json::serialize(object) + "\n";
}

Result<Proposal> from_json(std::string_view text, std::string_view id) {
  const auto damaged = [&](std::string_view why) {
    return Error::make(ErrorCode::internal,
                       "The proposal " + std::string(id) + " is damaged: " + std::string(why) + ".");
  };
  boost::system::error_code error;
  const boost::json::value value = boost::json::parse(text, error);
  if (error) return damaged("it is not JSON (" + error.message() + ")");
  const auto* object = value.if_object();
  if (object == nullptr) return damaged("it is not a JSON object");
  Proposal proposal;
  const std::pair<const char*, std::string*> fields[] = {
      {"id", &proposal.id},         {"desk", &proposal.desk},       {"path", &proposal.path},
      {"reason", &proposal.reason}, {"diff", &proposal.diff},       {"content", &proposal.content},
      {"time", &proposal.time},     {"status", &proposal.status}};
  for (const auto& [key, target] : fields) {
    const auto* field = object->if_contains(key);
    const auto* string = field != nullptr ? field->if_string() : nullptr;
    if (string == nullptr) return damaged(std::string("its '") + key + "' is not a string");
    target->assign(string->data(), string->size());
  }
  if (const auto* base = object->if_contains("base"); base != nullptr && base->is_string()) {
    proposal.base = std::string(base->as_string());
  }
  if (proposal.id != id) return damaged("it names another id");
  return proposal;
}

Result<Proposal> load(const std::filesystem::path& folder, std::string_view id) {
  if (!is_proposal_id(id)) return no_such_proposal(id);
  auto read = policy::SafeFile::read(folder / (std::string(id) + std::string(kFileSuffix)),
                                     kMaximumStoredBytes);
  if (!read.ok()) {
    if (read.error().code == ErrorCode::not_found) return no_such_proposal(id);
    return std::move(read).error();
  }
  if (read->truncated) {
    return Error::make(ErrorCode::internal, "The proposal " + std::string(id) + " is too large to read.");
  }
  return from_json(read->bytes, id);
}

}  // namespace

Result<void> check_proposal_place(const std::filesystem::path& resolved, const std::filesystem::path& desk_directory,
                                  std::span<const std::filesystem::path> proposable_paths, std::string_view shown) {
  if (policy::is_strictly_inside(resolved, desk_directory)) return success();
  for (const auto& place : proposable_paths) {
    if (policy::is_same_or_inside(resolved, place)) return success();
  }
  return Error::make(ErrorCode::refused,
                     std::string(shown) +
                         " is outside your desk folder; you may propose changes only to files inside it" +
                         (proposable_paths.empty() ? std::string(".") : " and inside the paths the config names in proposable_paths."));
}

std::string proposal_label(const std::filesystem::path& path, const std::filesystem::path& desk_directory) {
  if (policy::is_strictly_inside(path, desk_directory)) {
    const std::string& text = path.native();
    const std::size_t skip = desk_directory.native() == "/" ? 1 : desk_directory.native().size() + 1;
    return text.substr(skip);
  }
  return path.native().substr(1);
}

std::string india_time_iso8601(Clock::TimePoint time) {
  using namespace std::chrono;
  // India has kept UTC+05:30 all year since 1945, so a fixed offset is exact.
  const auto local = floor<seconds>(time) + hours(5) + minutes(30);
  const auto day = floor<days>(local);
  const year_month_day date(day);
  const hh_mm_ss<seconds> clock_time(local - day);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d+05:30", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<int>(clock_time.hours().count()), static_cast<int>(clock_time.minutes().count()),
                static_cast<int>(clock_time.seconds().count()));
  return buffer;
}

Result<std::shared_ptr<ProposalStore>> ProposalStore::open(const std::filesystem::path& folder,
                                                           std::shared_ptr<const Clock> clock,
                                                           std::vector<std::filesystem::path> proposable_paths) {
  if (!folder.is_absolute()) {
    return Error::make(ErrorCode::invalid_argument,
                       "The proposals folder " + policy::printable_path(folder.native()) + " is not absolute.");
  }
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) {
    return Error{ErrorCode::system, error.value(),
                 "The proposals folder " + folder.native() + " cannot be created: " + error.message() + "."};
  }
  // SafeFile refuses links anywhere on a path, so the folder is kept in its resolved form.
  auto resolved = std::filesystem::canonical(folder, error);
  if (error || !std::filesystem::is_directory(resolved, error)) {
    return Error::make(ErrorCode::invalid_argument,
                       "The proposals folder " + folder.native() + " is not a usable folder.");
  }
  if (clock == nullptr) clock = std::make_shared<SystemClock>();
  return std::shared_ptr<ProposalStore>(
      new ProposalStore(std::move(resolved), std::move(clock), std::move(proposable_paths)));
}

Result<Proposal> ProposalStore::create(std::string_view desk, const std::filesystem::path& path,
                                       std::string_view reason, std::string_view content,
                                       const policy::FileSystemCalls& calls, std::string_view label) {
  if (!path.is_absolute()) {
    return Error::make(ErrorCode::invalid_argument,
                       policy::printable_path(path.native()) + " is not an absolute path.");
  }
  if (content.size() > kMaximumProposalContentBytes) {
    return Error::make(ErrorCode::invalid_argument,
                       "The proposed content is " + std::to_string(content.size()) +
                           " bytes; a proposal may hold at most " +
                           std::to_string(kMaximumProposalContentBytes) + " bytes.");
  }
  // The proposal is stored as JSON text, which cannot carry bytes that are not UTF-8.
  if (!is_valid_utf8(content) || !is_valid_utf8(reason) || !is_valid_utf8(desk) ||
      !is_valid_utf8(path.native())) {
    return Error::make(ErrorCode::invalid_argument,
                       "A proposal must be UTF-8 text; the content, reason, desk or path is not.");
  }

  // First what the file is (regular, or absent), then its content, both with `calls`.
  Proposal proposal;
  DESKD_ASSIGN_OR_RETURN(proposal.base, file_base(path, calls));
  std::string current;
  bool current_is_text = true;
  bool current_too_large = false;
  if (proposal.base != "absent") {
    DESKD_ASSIGN_OR_RETURN(auto read, policy::SafeFile::read(path, kMaximumDiffBytes + 1, calls));
    current = std::move(read.bytes);
    current_too_large = read.truncated;
    current_is_text = current_too_large || is_valid_utf8(current);
  }

  proposal.desk = desk;
  proposal.path = path.native();
  proposal.reason = reason;
  proposal.content = content;
  proposal.status = "open";
  if (current_too_large) {
    proposal.diff = kDiffTooLarge;
  } else if (!current_is_text) {
    proposal.diff = kBinaryDiff;
  } else {
    proposal.diff = unified_diff(current, content, label.empty() ? std::string_view(path.native()).substr(1) : label);
  }

  std::lock_guard lock(mutex_);
  std::error_code error;
  std::filesystem::create_directories(folder_, error);  // it may have been removed since open
  for (int attempt = 0; attempt < 8 && proposal.id.empty(); ++attempt) {
    const std::string id = random_id();
    struct stat status {};
    const auto file = folder_ / (id + std::string(kFileSuffix));
    if (::lstat(file.c_str(), &status) != 0 && errno == ENOENT) proposal.id = std::move(id);
  }
  if (proposal.id.empty()) {
    return Error::make(ErrorCode::internal, "No unused proposal id was found in " + folder_.native() + ".");
  }
  proposal.time = india_time_iso8601(clock_->now());
  DESKD_RETURN_IF_ERROR(save(proposal));
  return proposal;
}

Result<std::vector<Proposal>> ProposalStore::list() const {
  std::vector<Proposal> proposals;
  std::error_code error;
  std::filesystem::directory_iterator entries(folder_, error);
  if (error == std::errc::no_such_file_or_directory) return proposals;
  if (error) {
    return Error{ErrorCode::system, error.value(),
                 "The proposals folder " + folder_.native() + " cannot be listed: " + error.message() + "."};
  }
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().native();
    if (!name.ends_with(kFileSuffix)) continue;
    const std::string_view id = std::string_view(name).substr(0, name.size() - kFileSuffix.size());
    if (!is_proposal_id(id)) continue;  // temporary files of a write in progress, strays
    auto proposal = load(folder_, id);
    if (proposal.ok()) proposals.push_back(std::move(proposal).value());
  }
  std::sort(proposals.begin(), proposals.end(), [](const Proposal& left, const Proposal& right) {
    return std::tie(left.time, left.id) < std::tie(right.time, right.id);
  });
  return proposals;
}

Result<Proposal> ProposalStore::get(std::string_view id) const { return load(folder_, id); }

Result<void> ProposalStore::set_status(std::string_view id, std::string_view status) {
  if (status != "accepted" && status != "rejected") {
    return Error::make(ErrorCode::invalid_argument,
                       "A proposal can be marked accepted or rejected, not " +
                           policy::printable_path(status) + ".");
  }
  std::lock_guard lock(mutex_);
  DESKD_ASSIGN_OR_RETURN(Proposal proposal, load(folder_, id));
  if (proposal.status != "open") {
    return Error::make(ErrorCode::refused,
                       "The proposal " + proposal.id + " is already " + proposal.status + ".");
  }
  proposal.status = status;
  return save(proposal);
}

Result<void> ProposalStore::save(const Proposal& proposal) const {
  const auto file = folder_ / (proposal.id + std::string(kFileSuffix));
  DESKD_RETURN_IF_ERROR(policy::SafeFile::write(file, to_json(proposal),
                                                policy::WriteMode::replace_atomically, folder_));
  // The rename is durable only once the folder itself is flushed.
  DESKD_ASSIGN_OR_RETURN(UniqueFd directory, policy::SafeFile::open_directory(folder_));
  if (::fsync(directory.get()) != 0) {
    return Error::from_errno(errno, "Flushing the proposals folder " + folder_.native() + " failed");
  }
  return success();
}

Result<std::string> file_base(const std::filesystem::path& path, const policy::FileSystemCalls& calls) {
  // What the path names is asked first, without following a link and without opening it:
  // an open of a FIFO releases its writer, an open of a device can act. Only a regular
  // file is opened, and only if the opened one is still that file.
  struct stat named {};
  if (calls.stat(AT_FDCWD, path.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::string("absent");
    return Error::from_errno(errno, policy::printable_path(path.native()) + " cannot be examined");
  }
  if (!S_ISREG(named.st_mode)) {
    return Error::refusal(policy::printable_path(path.native()) + " is not a regular file; only a regular file can be changed by a proposal.");
  }
  DESKD_ASSIGN_OR_RETURN(UniqueFd fd, policy::SafeFile::open_for_reading(path, calls));
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) return Error::from_errno(errno, "fstat " + policy::printable_path(path.native()));
  if (status.st_dev != named.st_dev || status.st_ino != named.st_ino) {
    return Error::refusal(policy::printable_path(path.native()) + " was replaced while it was being read; try again.");
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    return Error::make(ErrorCode::internal, "SHA-256 is not available from OpenSSL.");
  }
  char buffer[65536];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0) return Error::from_errno(errno, "read " + policy::printable_path(path.native()));
    if (count == 0) break;
    EVP_DigestUpdate(context.get(), buffer, static_cast<std::size_t>(count));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  EVP_DigestFinal_ex(context.get(), digest, &size);
  return "sha256:" + hex_encode(std::span<const unsigned char>(digest, size));
}

Result<std::filesystem::path> proposals_folder_outside(const policy::Confinement& confinement,
                                                       const std::filesystem::path& folder) {
  std::error_code error;
  const auto resolved = std::filesystem::weakly_canonical(folder, error);
  if (error || confinement.writable_place_for(resolved) != nullptr ||
      confinement.writable_place_for(resolved / "proposal.json") != nullptr) {
    return Error::make(ErrorCode::invalid_argument, policy::printable_path(folder.native()) +
                                                        " is inside the desk's writable places; choose a folder the "
                                                        "desk cannot write.");
  }
  return resolved;
}

}  // namespace deskd::tools
