// propose_file_change: the desk's only way to change a file it may not write. The change is
// stored for the user, never applied here.

#include <boost/json/object.hpp>

#include "policy/safe_file.h"
#include "runner/tools/file_tool_support.h"
#include "runner/tools/file_tools.h"
#include "runner/tools/proposal_store.h"
#include "runner/tools/tool_input.h"
#include "runner/tools/unified_diff.h"

namespace deskd::tools {
namespace {

using detail::shown;

// "+3 -1 lines" from the diff's hunks, for the model to check it changed what it meant to.
std::string diff_summary(const std::string& diff) {
  if (diff.empty() || !diff.starts_with("--- ")) return "no line diff shown";
  std::size_t added = 0;
  std::size_t removed = 0;
  std::size_t start = 0;
  std::size_t line_index = 0;
  while (start < diff.size()) {
    const std::size_t end = std::min(diff.find('\n', start), diff.size());
    if (line_index++ >= 2) {  // the two header lines also start with "---" and "+++"
      if (diff[start] == '+') ++added;
      if (diff[start] == '-') ++removed;
    }
    start = end + 1;
  }
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for "+" + std::string&&.
  std::string counts(1, '+');
  counts += std::to_string(added);
  counts += " -";
  counts += std::to_string(removed);
  counts += " lines";
  return counts;
}

}  // namespace

std::string_view ProposeFileChangeTool::description() const {
  return "Proposes new content for a file you may not write yourself, such as the user's "
         "files. The user sees your reason and a diff and accepts or rejects the change later; "
         "the file stays as it is until then. Give the complete new content of the file. Not "
         "for hidden secrets, nor for your Memory.md, memory/, notes/ and scratch/: write those "
         "with write_file.";
}

std::string_view ProposeFileChangeTool::input_schema() const {
  return R"({"type":"object","properties":{)"
         R"("path":{"type":"string","description":"The file to change; a relative path starts at your desk folder."},)"
         R"("content":{"type":"string","description":"The complete new content of the file."},)"
         R"("reason":{"type":"string","description":"Why the change is wanted, for the user who decides."}},)"
         R"("required":["path","content","reason"]})";
}

ToolResult ProposeFileChangeTool::run(const boost::json::object& input) const {
  const ToolInput fields(name(), input);
  auto requested = fields.required_string("path");
  if (!requested.ok()) return detail::failure(requested.error());
  auto content = fields.required_string("content");
  if (!content.ok()) return detail::failure(content.error());
  auto reason = fields.required_string("reason");
  if (!reason.ok()) return detail::failure(reason.error());
  if (reason->find_first_not_of(" \t\r\n") == std::string::npos) {
    return ToolResult::failure("propose_file_change needs a non-empty 'reason' saying why the change is wanted.");
  }

  const auto& policy = context().policy;
  auto resolved = policy.readable(*requested);
  if (!resolved.ok()) return context().policy_failure(resolved.error(), *requested, "propose");
  if (policy.writable(*requested).ok()) {
    return ToolResult::failure(shown(*requested) + " is in your own writable places; write it with write_file.");
  }
  if (context().proposals == nullptr) {
    return ToolResult::failure("propose_file_change is not available: this desk has no proposals folder.");
  }
  const ProposalStore& store = *context().proposals;
  if (auto place = check_proposal_place(*resolved, policy.desk_directory(), store.proposable_paths(), shown(*requested));
      !place.ok()) {
    return detail::failure(place.error());
  }
  // What is there now, asked in the desk's own view (its FileOpener): a special file is
  // refused before anything opens it.
  auto base = file_base(*resolved, *context().calls);
  if (!base.ok()) {
    return detail::failure(
        detail::opening_error(base.error(), *requested, *resolved, detail::Purpose::write_file, *context().calls));
  }
  const bool new_file = *base == "absent";
  if (!new_file) {
    // A proposal that changes nothing would only cost the user a decision.
    auto current = policy::SafeFile::read(*resolved, content->size() + 1, *context().calls);
    if (current.ok() && !current->truncated && current->bytes == *content) {
      return ToolResult::failure(shown(*requested) + " already holds exactly this content; there is nothing to propose.");
    }
  }

  auto proposal = context().proposals->create(context().desk_name, *resolved, *reason, *content, *context().calls,
                                              proposal_label(*resolved, policy.desk_directory()));
  if (!proposal.ok()) {
    return detail::failure(
        detail::opening_error(proposal.error(), *requested, *resolved, detail::Purpose::write_file, *context().calls));
  }
  return ToolResult::success("Proposal " + proposal->id + " stored: " + (new_file ? "a new file " : "a change to ") +
                             shown(*requested) + " (" + diff_summary(proposal->diff) +
                             "). The user will accept or reject it; until then the file stays as it is.");
}

}  // namespace deskd::tools
