#include "sandbox/supplementary_groups.h"

#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace deskd::sandbox {

std::vector<gid_t> groups_desks_would_keep() {
  if (::geteuid() == 0) return {};
  const int count = ::getgroups(0, nullptr);
  if (count <= 0) return {};
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  const int got = ::getgroups(count, groups.data());
  groups.resize(got < 0 ? 0 : static_cast<std::size_t>(got));
  // The kernel may list the process's own gid among them; the desk has that one anyway.
  const gid_t own = ::getegid();
  std::erase_if(groups, [&](gid_t group) { return group == own; });
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  return groups;
}

std::string describe_groups(const std::vector<gid_t>& groups) {
  std::string text;
  for (std::size_t index = 0; index < groups.size(); ++index) {
    if (index > 0) text += ", ";
    // getgrgid_r: deskd may have threads. A group without a name is shown by its id alone.
    std::string buffer(16384, '\0');
    group entry{};
    group* found = nullptr;
    if (::getgrgid_r(groups[index], &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
        found->gr_name != nullptr) {
      text += std::string(found->gr_name) + " (" + std::to_string(groups[index]) + ")";
    } else {
      text += std::to_string(groups[index]);
    }
  }
  return text;
}

namespace {

std::string refusal(const std::vector<gid_t>& groups) {
  return "deskd runs unprivileged (uid " + std::to_string(::geteuid()) + ") with the supplementary group" +
         std::string(groups.size() == 1 ? " " : "s ") + describe_groups(groups) +
         ", which its desks would keep: an unprivileged deskd cannot drop them inside a desk's user namespace, so "
         "every desk could read what those groups may read. Run deskd without them (a systemd unit with User= and "
         "no SupplementaryGroups=, or a user that is in no other group), or, to let the desks keep them, set "
         "allow_supplementary_groups = true in [sandbox] (--allow-supplementary-groups for deskd sandbox, shell, "
         "mcp and run).";
}

}  // namespace

Result<void> check_supplementary_groups(bool allowed) {
  if (allowed) return success();
  const std::vector<gid_t> groups = groups_desks_would_keep();
  if (groups.empty()) return success();
  return Error::make(ErrorCode::refused, refusal(groups));
}

SupportCheck report_supplementary_groups(bool allowed) {
  SupportCheck check;
  check.name = "supplementary groups";
  check.available = true;
  check.required = true;
  const std::vector<gid_t> groups = groups_desks_would_keep();
  if (groups.empty()) {
    check.detail = ::geteuid() == 0 ? "root: every sandbox drops them" : "none besides deskd's own group";
  } else if (allowed) {
    check.detail = describe_groups(groups) + ": desks keep them (allow_supplementary_groups = true)";
  } else {
    check.available = false;
    check.detail = describe_groups(groups) + ": desks would keep them, so every launch is refused";
    check.fix = refusal(groups);
  }
  return check;
}

}  // namespace deskd::sandbox
