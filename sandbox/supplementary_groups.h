#pragma once
// The supplementary groups an unprivileged deskd would hand its desks. A root deskd drops
// them in every sandbox (setgroups, credentials.cpp); an unprivileged one cannot: it must
// deny setgroups in the desk's user namespace before it may map its gid, so every desk
// process keeps deskd's groups and reads what they may read (a root:ssl-cert 0640 key, say).
// Such a deskd refuses to launch unless told that the desks may keep them.

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/host_support.h"

namespace deskd::sandbox {

/// The groups a desk of this process would keep: its supplementary groups other than its
/// own gid, when it is not root; none for root, which drops them.
std::vector<gid_t> groups_desks_would_keep();

/// "ssl-cert (111), docker (998)": each group by name where it has one, and its id.
std::string describe_groups(const std::vector<gid_t>& groups);

/// Refuses (ErrorCode::refused) when groups_desks_would_keep() is not empty and `allowed` is
/// false, with a sentence naming the groups, how to drop them and how to allow them.
Result<void> check_supplementary_groups(bool allowed);

/// For `deskd doctor`: the groups desks would keep, and whether launches are refused for
/// them (required: without the allowance no sandbox starts).
SupportCheck report_supplementary_groups(bool allowed);

}  // namespace deskd::sandbox
