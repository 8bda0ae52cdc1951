#pragma once
// Deciding a proposal: the user (through deskctl) accepts or rejects a change a desk
// proposed. Accepting writes the proposed content to the file as the daemon's user,
// atomically (a new file beside it, fsync'ed, renamed over it, keeping its mode and owner),
// and only when the file is still what the proposal was made against and the path is not
// hidden from the desk. The desk's own tools are not involved: it could never write there.

#include <string_view>

#include "base/result.h"
#include "policy/path_policy.h"
#include "runner/tools/proposal_store.h"

namespace deskd::tools {

/// Writes the proposal's content to its file and marks it accepted; returns it as stored.
/// Refuses (ErrorCode::refused, with a sentence) a proposal that is not open, one whose path
/// `policy` does not let the desk read (hidden), one whose file changed since it was made,
/// and one made before deskd recorded what the file was.
Result<Proposal> accept_proposal(ProposalStore& store, const policy::PathPolicy& policy, std::string_view id);

/// Marks an open proposal rejected; the file is untouched.
Result<Proposal> reject_proposal(ProposalStore& store, std::string_view id);

}  // namespace deskd::tools
