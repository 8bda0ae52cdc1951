#include "runner/desk/skill_library.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "base/utf8_text.h"
#include "policy/path_resolution.h"
#include "policy/safe_file.h"
#include "runner/desk/front_matter.h"

namespace deskd::desk {
namespace {

namespace fs = std::filesystem;

// The Agent Skills format suggests a SKILL.md under 500 lines; this is far past that, and
// keeps a stray large file out of a turn.
constexpr std::size_t kMaximumSkillBytes = 256 * 1024;
constexpr std::size_t kMaximumNameCharacters = 64;
constexpr std::size_t kMaximumDescriptionCharacters = 1024;
constexpr std::string_view kLinkRefused =
    " is a symbolic link. deskd reads skills only from real folders and files inside the "
    "desk folder, so that no link can bring a file from elsewhere (a hidden secret) into "
    "the model's context.";

std::string in_quotes(std::string_view text) { return "\"" + policy::printable_path(text) + "\""; }

std::size_t characters(std::string_view utf8) {
  return static_cast<std::size_t>(
      std::count_if(utf8.begin(), utf8.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// Checks a parsed SKILL.md against the format; returns every reason it is unusable.
std::vector<SkillProblem> check_skill(const FrontMatter& front_matter, const fs::path& file,
                                      std::string_view folder_name,
                                      std::span<const std::string_view> reserved_names) {
  std::vector<SkillProblem> problems;
  const auto add = [&](std::size_t line, std::string why) {
    problems.push_back(SkillProblem{file, line, std::move(why)});
  };
  const FrontMatterField* name = front_matter.find("name");
  if (name == nullptr || name->value.empty()) {
    add(name == nullptr ? 1 : name->line, "its front matter has no name.");
  } else if (!is_valid_skill_name(name->value)) {
    add(name->line, "its name " + in_quotes(name->value) +
                        " is not a skill name: 1 to 64 lowercase letters, digits and hyphens, "
                        "with no hyphen at either end and no two in a row.");
  } else if (name->value != folder_name) {
    add(name->line, "its name " + in_quotes(name->value) + " does not match its folder " +
                        in_quotes(folder_name) + ".");
  } else if (std::find(reserved_names.begin(), reserved_names.end(), name->value) !=
             reserved_names.end()) {
    add(name->line, "its name " + in_quotes(name->value) + " is taken by the desk's own /" +
                        name->value + " command.");
  }
  const FrontMatterField* description = front_matter.find("description");
  if (description == nullptr || description->value.empty()) {
    add(description == nullptr ? 1 : description->line, "its front matter has no description.");
  } else if (characters(description->value) > kMaximumDescriptionCharacters) {
    add(description->line, "its description is longer than 1024 characters.");
  }
  if (front_matter.body.empty()) {
    add(front_matter.closing_line, "it has no instructions after its front matter.");
  }
  return problems;
}

}  // namespace

std::string SkillProblem::text() const {
  return policy::printable_path(path.native()) + (line == 0 ? "" : ":" + std::to_string(line)) +
         ": " + why;
}

bool is_valid_skill_name(std::string_view name) {
  if (name.empty() || name.size() > kMaximumNameCharacters) return false;
  if (name.front() == '-' || name.back() == '-' || name.find("--") != std::string_view::npos) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

SkillLibrary SkillLibrary::scan(const fs::path& desk_folder,
                                std::span<const std::string_view> reserved_names) {
  std::error_code error;
  // SafeFile opens only paths free of links; the resolved desk folder is one.
  const fs::path desk = fs::canonical(desk_folder, error);
  if (error) {
    SkillLibrary library;
    library.problems_.push_back(
        SkillProblem{desk_folder, 0, "the desk folder cannot be resolved (" + error.message() + ")."});
    return library;
  }
  return scan_folder(desk / "skills", reserved_names);
}

SkillLibrary SkillLibrary::scan_folder(const fs::path& skills_folder_given,
                                       std::span<const std::string_view> reserved_names) {
  SkillLibrary library;
  const auto problem = [&](fs::path path, std::size_t line, std::string why) {
    library.problems_.push_back(SkillProblem{std::move(path), line, std::move(why)});
  };
  std::error_code error;
  // The folder's own parents are resolved (SafeFile refuses links); the folder itself
  // must not be a link.
  const fs::path parent = fs::canonical(skills_folder_given.parent_path(), error);
  if (error) {
    problem(skills_folder_given, 0, "the skills folder cannot be resolved (" + error.message() + ").");
    return library;
  }
  const fs::path skills_folder = parent / skills_folder_given.filename();
  const auto folder_status = fs::symlink_status(skills_folder, error);
  if (folder_status.type() == fs::file_type::not_found) return library;
  if (fs::is_symlink(folder_status)) {
    problem(skills_folder, 0, "The skills folder" + std::string(kLinkRefused));
    return library;
  }
  // increment(error), not a range-for: a failing readdir must not throw out of the scan.
  std::error_code listing_error;
  fs::directory_iterator next(skills_folder, listing_error);
  for (; !listing_error && next != fs::directory_iterator(); next.increment(listing_error)) {
    const fs::directory_entry& entry = *next;
    const std::string folder_name = entry.path().filename().native();
    if (folder_name.starts_with('.')) continue;  // .git and editors' leftovers
    const auto entry_status = entry.symlink_status(error);
    if (fs::is_symlink(entry_status)) {
      problem(entry.path(), 0, "The skill folder" + std::string(kLinkRefused));
      continue;
    }
    if (!fs::is_directory(entry_status)) continue;  // a README beside the skills
    const fs::path file = entry.path() / "SKILL.md";
    const auto file_status = fs::symlink_status(file, error);
    if (file_status.type() == fs::file_type::not_found) {
      problem(entry.path(), 0, "the skill folder has no SKILL.md.");
      continue;
    }
    if (fs::is_symlink(file_status)) {
      problem(file, 0, "SKILL.md" + std::string(kLinkRefused));
      continue;
    }
    // A link swapped in after the checks above is refused by SafeFile, not followed.
    auto contents = policy::SafeFile::read(file, kMaximumSkillBytes);
    if (!contents.ok()) {
      problem(file, 0, contents.error().what);
      continue;
    }
    if (contents->truncated) {
      problem(file, 0, "it is larger than 256 KiB.");
      continue;
    }
    if (!is_valid_utf8(contents->bytes)) {
      problem(file, 0, "it is not UTF-8 text.");
      continue;
    }
    FrontMatterParse parsed = parse_front_matter(contents->bytes);
    if (!parsed.front_matter) {
      problem(file, parsed.line, std::move(parsed.why));
      continue;
    }
    FrontMatter& front_matter = *parsed.front_matter;
    auto found = check_skill(front_matter, file, folder_name, reserved_names);
    if (!found.empty()) {
      library.problems_.insert(library.problems_.end(), found.begin(), found.end());
      continue;
    }
    library.skills_.push_back(Skill{folder_name, front_matter.find("description")->value, file,
                                    std::move(front_matter.body)});
  }
  if (listing_error) {
    problem(skills_folder, 0,
            "the skills folder cannot be listed (" + listing_error.message() + ").");
  }
  std::sort(library.skills_.begin(), library.skills_.end(),
            [](const Skill& left, const Skill& right) { return left.name < right.name; });
  std::stable_sort(library.problems_.begin(), library.problems_.end(),
                   [](const SkillProblem& left, const SkillProblem& right) {
                     return std::tie(left.path, left.line) < std::tie(right.path, right.line);
                   });
  return library;
}

const Skill* SkillLibrary::find(std::string_view name) const {
  const auto found = std::find_if(skills_.begin(), skills_.end(),
                                  [&](const Skill& skill) { return skill.name == name; });
  return found == skills_.end() ? nullptr : &*found;
}

Result<std::string> SkillLibrary::invocation(std::string_view name,
                                             std::string_view arguments) const {
  const Skill* skill = find(name);
  if (skill == nullptr) {
    return Error::make(ErrorCode::not_found, "There is no skill " + in_quotes(name) +
                                                 " on this desk; /skills lists its skills.");
  }
  // The folder is named because instructions refer to their scripts/ and references/ by
  // relative paths, and the sandbox shows the desk folder at the same absolute path.
  std::string text = "Skill /" + skill->name + " (from " + skill->path.native() + "):\n\n";
  constexpr std::string_view kPlaceholder = "$ARGUMENTS";
  std::string_view body = skill->body;
  bool substituted = false;
  for (auto position = body.find(kPlaceholder); position != std::string_view::npos;
       position = body.find(kPlaceholder)) {
    text += body.substr(0, position);
    text += arguments;
    body.remove_prefix(position + kPlaceholder.size());
    substituted = true;
  }
  text += body;
  if (!substituted && !arguments.empty()) {
    text += "\n\nArguments: ";
    text += arguments;
  }
  return text;
}

}  // namespace deskd::desk
