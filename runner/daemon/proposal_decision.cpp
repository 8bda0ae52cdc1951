#include "runner/daemon/proposal_decision.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include "base/hex.h"
#include "base/unique_fd.h"
#include "policy/path_resolution.h"
#include "policy/safe_file.h"
#include "runner/daemon/owner_rights.h"

namespace deskd::tools {

Result<Proposal> accept_proposal(ProposalStore& store, const policy::PathPolicy& policy, std::string_view id) {
  DESKD_ASSIGN_OR_RETURN(Proposal proposal, store.get(id));
  if (proposal.status != "open") {
    return Error::refusal("Proposal " + proposal.id + " is already " + proposal.status + ".");
  }
  const std::string shown = policy::printable_path(proposal.path);
  auto allowed = policy.readable(proposal.path);
  if (!allowed.ok()) {
    return Error::refusal("Proposal " + proposal.id + " cannot be accepted: " + allowed.error().what);
  }
  if (allowed->native() != proposal.path) {
    return Error::refusal("Proposal " + proposal.id + " cannot be accepted: " + shown + " now resolves to " +
                   policy::printable_path(allowed->native()) + ".");
  }
  // A proposal stored by an older deskd (or written into the store by hand) may name any
  // path: the place is checked again here, not only when the desk proposed it.
  if (auto place = check_proposal_place(*allowed, policy.desk_directory(), store.proposable_paths(), shown); !place.ok()) {
    return Error::refusal("Proposal " + proposal.id + " cannot be accepted: " + place.error().what);
  }
  if (proposal.base.empty()) {
    return Error::refusal("Proposal " + proposal.id +
                   " was made by an older deskd that did not record the file it was made against; ask the desk "
                   "to propose it again.");
  }
  DESKD_ASSIGN_OR_RETURN(const FileOwner owner, proposal_writer(*allowed, policy.desk_directory()));
  const std::filesystem::path target(proposal.path);
  const std::string& content = proposal.content;
  const std::string& base = proposal.base;
  const std::string proposal_id = proposal.id;
  DESKD_RETURN_IF_ERROR(run_as_owner(owner, [&]() -> Result<void> {
    // Both the check and the write with the owner's rights: what the owner cannot read or
    // write, the accept cannot either.
    DESKD_ASSIGN_OR_RETURN(const std::string now, file_base(target));
    if (now != base) {
      return Error::refusal("Proposal " + proposal_id + " cannot be accepted: " + shown +
                     (now == "absent" ? " was deleted" : " changed") +
                     " after the proposal was made. Nothing was written; reject it, or ask the desk to propose the "
                     "change again.");
    }
    auto written = policy::SafeFile::write(target, content, policy::WriteMode::replace_durably, target.parent_path());
    if (!written.ok() && written.error().error_number == EACCES && now != "absent") {
      // The file's owner may change the file but not create one beside it (someone
      // else's folder): rewritten in place and flushed, as the owner could do it.
      written = policy::SafeFile::write(target, content, policy::WriteMode::rewrite_in_place, target.parent_path());
    }
    return written;
  }));
  DESKD_RETURN_IF_ERROR(store.set_status(proposal.id, "accepted"));
  proposal.status = "accepted";
  return proposal;
}

Result<Proposal> reject_proposal(ProposalStore& store, std::string_view id) {
  DESKD_ASSIGN_OR_RETURN(Proposal proposal, store.get(id));
  if (proposal.status != "open") {
    return Error::refusal("Proposal " + proposal.id + " is already " + proposal.status + ".");
  }
  DESKD_RETURN_IF_ERROR(store.set_status(proposal.id, "rejected"));
  proposal.status = "rejected";
  return proposal;
}

}  // namespace deskd::tools
