// write_file and edit_file: the two tools that change files, only inside the desk's own
// writable places. Memory.md is rewritten in place because the sandbox binds that one file
// by inode: after an atomic rename, bash would go on seeing the old file.

#include <boost/json/object.hpp>
#include <cstring>

#include "base/utf8_text.h"
#include "policy/safe_file.h"
#include "runner/tools/file_tool_support.h"
#include "runner/tools/file_tools.h"
#include "runner/tools/tool_input.h"

namespace deskd::tools {
namespace {

using detail::shown;

policy::WriteMode write_mode_for(const policy::PathPolicy& policy, const std::filesystem::path& resolved) {
  const auto* place = policy.confinement().writable_place_for(resolved);
  return place != nullptr && place->kind == policy::WritablePlace::Kind::file
             ? policy::WriteMode::rewrite_in_place
             : policy::WriteMode::replace_atomically;
}

Result<void> write(const FileToolContext& context, std::string_view requested, const std::filesystem::path& resolved,
                   std::string_view content) {
  const policy::PathPolicy& policy = context.policy;
  auto written = policy::SafeFile::write(resolved, content, write_mode_for(policy, resolved), policy.desk_directory(),
                                         *context.calls);
  if (!written.ok()) {
    return detail::opening_error(written.error(), requested, resolved, detail::Purpose::write_file, *context.calls);
  }
  return success();
}

// Overlapping matches count: "aa" in "aaa" could mean either place, so it is ambiguous.
std::size_t occurrences(std::string_view text, std::string_view part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

}  // namespace

std::string_view WriteFileTool::description() const {
  return "Writes a whole file, replacing what it held (missing folders are created). You may "
         "write only your Memory.md and files inside memory/, notes/ and scratch/ of your desk "
         "folder; a relative path starts at the desk folder. To change any other file, use "
         "propose_file_change.";
}

std::string_view WriteFileTool::input_schema() const {
  return R"({"type":"object","properties":{)"
         R"("path":{"type":"string","description":"The file to write: Memory.md, or a path inside memory/, notes/ or scratch/."},)"
         R"("content":{"type":"string","description":"The complete new content of the file."}},)"
         R"("required":["path","content"]})";
}

ToolResult WriteFileTool::run(const boost::json::object& input) const {
  const ToolInput fields(name(), input);
  auto requested = fields.required_string("path");
  if (!requested.ok()) return detail::failure(requested.error());
  auto content = fields.required_string("content");
  if (!content.ok()) return detail::failure(content.error());

  auto resolved = context().policy.writable(*requested);
  if (!resolved.ok()) return context().policy_failure(resolved.error(), *requested, "write");
  auto written = write(context(), *requested, *resolved, *content);
  if (!written.ok()) return detail::failure(written.error());
  return ToolResult::success("Wrote " + detail::count_of(content->size(), "byte", "bytes") + " to " +
                             shown(*requested) + ".");
}

std::string_view EditFileTool::description() const {
  return "Replaces exact text in a file you may write (your Memory.md, and files inside "
         "memory/, notes/ and scratch/). old_text must match the file exactly, spaces and line "
         "breaks included, and appear only once unless replace_all is true; read the file "
         "first. To change other files, use propose_file_change.";
}

std::string_view EditFileTool::input_schema() const {
  return R"({"type":"object","properties":{)"
         R"("path":{"type":"string","description":"The file to edit."},)"
         R"("old_text":{"type":"string","description":"The exact text to replace; not empty."},)"
         R"("new_text":{"type":"string","description":"The text to put in its place."},)"
         R"("replace_all":{"type":"boolean","description":"Replace every occurrence instead of exactly one. Default false."}},)"
         R"("required":["path","old_text","new_text"]})";
}

ToolResult EditFileTool::run(const boost::json::object& input) const {
  const ToolInput fields(name(), input);
  auto requested = fields.required_string("path");
  if (!requested.ok()) return detail::failure(requested.error());
  auto old_text = fields.required_string("old_text");
  if (!old_text.ok()) return detail::failure(old_text.error());
  auto new_text = fields.required_string("new_text");
  if (!new_text.ok()) return detail::failure(new_text.error());
  auto replace_all = fields.optional_bool("replace_all");
  if (!replace_all.ok()) return detail::failure(replace_all.error());
  if (old_text->empty()) {
    return ToolResult::failure("edit_file needs a non-empty 'old_text'; to write a whole file, use write_file.");
  }
  if (*old_text == *new_text) {
    return ToolResult::failure("old_text and new_text are the same, so there is nothing to change.");
  }

  auto resolved = context().policy.writable(*requested);
  if (!resolved.ok()) return context().policy_failure(resolved.error(), *requested, "write");
  auto current = policy::SafeFile::read(*resolved, kMaximumFileBytes, *context().calls);
  if (!current.ok()) {
    return detail::failure(
        detail::opening_error(current.error(), *requested, *resolved, detail::Purpose::edit_file, *context().calls));
  }
  if (current->truncated) {
    return ToolResult::failure(shown(*requested) + " is larger than 16 MiB; edit it with bash instead.");
  }
  std::string& text = current->bytes;
  const std::size_t probe = std::min(text.size(), ReadFileTool::kBinaryProbeBytes);
  if (std::memchr(text.data(), '\0', probe) != nullptr || !is_valid_utf8(text)) {
    return ToolResult::failure(shown(*requested) +
                               " is a binary file, not UTF-8 text, so edit_file does not change it.");
  }

  const std::size_t found = occurrences(text, *old_text);
  if (found == 0) return ToolResult::failure("old_text was not found in " + shown(*requested) + ".");
  if (found > 1 && !replace_all->value_or(false)) {
    return ToolResult::failure("old_text appears " + std::to_string(found) + " times in " + shown(*requested) +
                               "; give more context or set replace_all.");
  }
  std::string edited;
  edited.reserve(text.size());
  std::size_t replaced = 0;
  std::size_t from = 0;
  for (std::size_t at = text.find(*old_text); at != std::string::npos; at = text.find(*old_text, from)) {
    edited.append(text, from, at - from);
    edited += *new_text;
    from = at + old_text->size();
    ++replaced;
  }
  edited.append(text, from, std::string::npos);

  auto written = write(context(), *requested, *resolved, edited);
  if (!written.ok()) return detail::failure(written.error());
  return ToolResult::success("Replaced " + detail::count_of(replaced, "occurrence", "occurrences") +
                             " of old_text in " + shown(*requested) + ".");
}

}  // namespace deskd::tools
