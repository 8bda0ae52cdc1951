#pragma once
// SkillLibrary: a desk's skills, in the Agent Skills format: `<desk>/skills/<name>/SKILL.md`,
// front matter between `---` lines (at least `name` and `description`), then the
// instructions. A malformed skill is reported with file:line and left out; it never stops
// the desk.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace deskd::desk {

/// A usable skill.
struct Skill {
  std::string name;            ///< Also its folder's name; invoked as /<name>.
  std::string description;     ///< What it does and when to use it (front matter).
  std::filesystem::path path;  ///< Its SKILL.md.
  std::string body;            ///< The instructions after the front matter.
};

/// Why a skill was left out.
struct SkillProblem {
  std::filesystem::path path;  ///< The SKILL.md, or the skill's folder.
  std::size_t line = 0;        ///< 1-based; 0 when the problem is not on a line.
  std::string why;             ///< A sentence.

  /// "path:line: why" (or "path: why" without a line).
  std::string text() const;
};

class SkillLibrary {
 public:
  /// An empty library.
  SkillLibrary() = default;

  /// Reads every `skills/<name>/SKILL.md` of `desk_folder`. A missing skills/ folder is no
  /// problem. Skills whose name is in `reserved_names` (the desk's own commands, such as
  /// "stop") are reported, since /<name> could not reach them. Symbolic links are refused.
  static SkillLibrary scan(const std::filesystem::path& desk_folder,
                           std::span<const std::string_view> reserved_names = {});
  /// The same for a skills folder elsewhere (a desk's `skills` setting): every
  /// `<skills_folder>/<name>/SKILL.md`. A missing folder is no problem.
  static SkillLibrary scan_folder(const std::filesystem::path& skills_folder,
                                  std::span<const std::string_view> reserved_names = {});

  /// The usable skills, sorted by name.
  const std::vector<Skill>& skills() const { return skills_; }
  /// The skills left out and why, sorted by path.
  const std::vector<SkillProblem>& problems() const { return problems_; }
  /// The usable skill called `name`, or nullptr.
  const Skill* find(std::string_view name) const;

  /// The message for a turn that runs skill `name` with `arguments` (possibly empty): its
  /// folder, then its instructions, with `$ARGUMENTS` replaced or the arguments appended.
  /// An unknown name is a not_found error.
  Result<std::string> invocation(std::string_view name, std::string_view arguments) const;

 private:
  std::vector<Skill> skills_;
  std::vector<SkillProblem> problems_;
};

/// Whether `name` is a valid Agent Skills name: 1-64 of [a-z0-9-], no hyphen at either
/// end, no two hyphens in a row.
bool is_valid_skill_name(std::string_view name);

}  // namespace deskd::desk
