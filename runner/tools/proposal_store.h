#pragma once
// ProposalStore: changes a desk proposes to files it may not write (propose_file_change),
// kept for the user to accept or reject. One JSON file per proposal, `<id>.json`, in a
// folder the caller chooses outside every desk's writable places, so no desk can forge or
// edit a proposal with its own tools.

#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "policy/confinement.h"
#include "policy/file_system_calls.h"

namespace deskd::tools {

/// One proposed change, as stored.
struct Proposal {
  std::string id;       ///< "p-" and 12 lower-case hex digits.
  std::string desk;     ///< The desk that proposed it.
  std::string path;     ///< The file to change: absolute, resolved, in the desk's view.
  std::string reason;   ///< Why, in the desk's words.
  std::string diff;     ///< Unified diff from the file as it was to `content`.
  std::string content;  ///< The whole new content of the file.
  std::string time;     ///< When, as ISO 8601 in India time ("2025-01-31T09:15:00+05:30").
  std::string status;   ///< "open", "accepted" or "rejected".
  /// What the file was when the proposal was made: "sha256:<hex>" of its bytes, or "absent".
  /// Accepting checks it, so a proposal never overwrites a change made since. Empty for
  /// proposals stored before deskd recorded it; those cannot be accepted.
  std::string base;
};

/// `file_base(path)`: the `base` a proposal made now would record for `path`, with the
/// rights of `calls`. Refuses anything but a regular file (or "absent"), before any open
/// that could have side effects: a FIFO's writer is never released, a device never opened.
Result<std::string> file_base(const std::filesystem::path& path,
                              const policy::FileSystemCalls& calls = policy::own_file_system_calls());

/// Where a desk may propose a change: strictly inside its own folder, or inside one of the
/// `proposable_paths` the config names. Anything else is refused with a sentence naming
/// `shown` (the path as the desk wrote it).
Result<void> check_proposal_place(const std::filesystem::path& resolved, const std::filesystem::path& desk_directory,
                                  std::span<const std::filesystem::path> proposable_paths, std::string_view shown);

/// The label a proposal's diff gives `path`: relative to the desk folder ("plan.md", so that
/// `patch -p1` in the desk folder applies it), else the absolute path without its "/".
std::string proposal_label(const std::filesystem::path& path, const std::filesystem::path& desk_directory);

/// The largest content a proposal may carry.
inline constexpr std::size_t kMaximumProposalContentBytes = std::size_t{16} << 20;

/// `time` as ISO 8601 in India time (UTC+05:30, no daylight saving), to the second.
std::string india_time_iso8601(Clock::TimePoint time);

class ProposalStore {
 public:
  /// Opens the store in `folder` (absolute), creating the folder if it is missing.
  /// `clock` stamps new proposals. `proposable_paths` (absolute, resolved): the places
  /// outside the desk folder that the desk may propose changes to (the config's
  /// `proposable_paths`); none by default.
  static Result<std::shared_ptr<ProposalStore>> open(const std::filesystem::path& folder,
                                                     std::shared_ptr<const Clock> clock,
                                                     std::vector<std::filesystem::path> proposable_paths = {});

  /// The places outside the desk folder that proposals may name.
  const std::vector<std::filesystem::path>& proposable_paths() const { return proposable_paths_; }

  /// The proposals folder, resolved.
  const std::filesystem::path& folder() const { return folder_; }

  /// Stores a new open proposal to replace the file at `path` (absolute and resolved, as
  /// PathPolicy returns it, and already allowed for reading) by `content`. The diff is
  /// taken against the file as it is now, or against nothing when it does not exist; the
  /// file is read only through `calls` (for a desk, its FileOpener: what the desk cannot
  /// read, it cannot propose to change). `label` names the file in the diff
  /// (proposal_label); empty means the path without its leading "/".
  /// Refuses content that is not UTF-8 or past kMaximumProposalContentBytes, and a path that
  /// names a folder, a special file or something that cannot be read.
  Result<Proposal> create(std::string_view desk, const std::filesystem::path& path,
                          std::string_view reason, std::string_view content,
                          const policy::FileSystemCalls& calls = policy::own_file_system_calls(),
                          std::string_view label = {});

  /// Every proposal, oldest first. Files that are not proposals, or are damaged, are skipped.
  Result<std::vector<Proposal>> list() const;

  /// The proposal `id`; not_found when there is none (or `id` is not a proposal id).
  Result<Proposal> get(std::string_view id) const;

  /// Marks an open proposal "accepted" or "rejected". Refuses any other status and a
  /// proposal that is no longer open.
  Result<void> set_status(std::string_view id, std::string_view status);

 private:
  ProposalStore(std::filesystem::path folder, std::shared_ptr<const Clock> clock,
                std::vector<std::filesystem::path> proposable_paths)
      : folder_(std::move(folder)), clock_(std::move(clock)), proposable_paths_(std::move(proposable_paths)) {}

  Result<void> save(const Proposal& proposal) const;

  std::filesystem::path folder_;
  std::shared_ptr<const Clock> clock_;
  std::vector<std::filesystem::path> proposable_paths_;
  // Serialises create and set_status in this process, so a status change never races a
  // second one on the same file.
  mutable std::mutex mutex_;
};

/// `folder` resolved, unless it is one of `confinement`'s writable places or inside one: a
/// desk must not be able to forge or edit a proposal with its own tools.
Result<std::filesystem::path> proposals_folder_outside(const policy::Confinement& confinement,
                                                       const std::filesystem::path& folder);

}  // namespace deskd::tools
