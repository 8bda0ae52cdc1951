#pragma once
// A unified diff of two texts, line by line, as `diff -u` writes it: what a person reads
// before accepting a proposed change.

#include <cstddef>
#include <string>
#include <string_view>

namespace deskd::tools {

/// Beyond either limit (for the old or the new text) no diff is computed.
inline constexpr std::size_t kMaximumDiffBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaximumDiffLines = 20'000;
/// What the diff says instead when a text is past the limits.
inline constexpr std::string_view kDiffTooLarge = "(too large to show)";

/// The unified diff from `old_text` to `new_text` with 3 lines of context, headed
/// `--- a/<label>` and `+++ b/<label>` (in double quotes with C escapes, as git and patch
/// write them, when the label holds a control byte, '"' or '\\', so that a newline in a
/// name never starts a line of its own); "" when the texts are equal, kDiffTooLarge when
/// either is past the limits. A missing final newline is marked as diff marks it.
std::string unified_diff(std::string_view old_text, std::string_view new_text, std::string_view label);

}  // namespace deskd::tools
