#pragma once
// Deciding a proposal: the user (through deskctl) accepts or rejects a change a desk
// proposed. Accepting writes the proposed content to the file with its owner's rights (the
// owner of the file it replaces, or of the desk folder for a new file; never root's powers:
// owner_rights.h), atomically (a new file beside it, fsync'ed, renamed over it, keeping its
// mode), without following a link, and only when the file is still what the proposal was
// made against, lies where the desk may propose (inside its folder or its proposable_paths)
// and is not hidden from the desk. The desk's own tools are not involved.

#include <string_view>

#include "base/result.h"
#include "policy/path_policy.h"
#include "runner/tools/proposal_store.h"

namespace deskd::tools {

/// Writes the proposal's content to its file and marks it accepted; returns it as stored.
/// Refuses (ErrorCode::refused, with a sentence) a proposal that is not open, one whose path
/// `policy` does not let the desk read (hidden) or that lies outside the places a desk may
/// propose, one whose file changed since it was made, and one made before deskd recorded
/// what the file was. `policy` resolves in the desk's view (its FileOpener) in the daemon.
Result<Proposal> accept_proposal(ProposalStore& store, const policy::PathPolicy& policy, std::string_view id);

/// Marks an open proposal rejected; the file is untouched.
Result<Proposal> reject_proposal(ProposalStore& store, std::string_view id);

}  // namespace deskd::tools
