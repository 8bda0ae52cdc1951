// A console a desk cannot forge: a desk (script model, real sandbox) prints escape sequences
// from bash, lists a file whose name holds a newline, and proposes a change to a file of its
// folder whose name holds ESC, look-alikes of '/' and a newline. deskctl's `ask`, `events`,
// `proposals` and `reject` must print none of those bytes raw — only their escaped forms —
// while `--json` keeps every byte exact. The tests assert on the bytes deskctl printed.

#include <boost/json.hpp>

#include <fstream>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/daemon_fixture.h"
#include "e2e/serve_test_support.h"

namespace deskd::e2e {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

// A file of the desk's own folder, named so that printed raw it would erase its line and
// show as the desk's plan.md (U+2215 for '/'), with a newline to start a line of its own.
const std::string kForgedName =
    "zz\x1b[2K\x1b[1G  \u2215var\u2215lib\u2215deskd\u2215desks\u2215alpha\u2215plan.md\nwhy: tidier";
// What bash prints: cursor up and erase, a window title, an 8-bit CSI (U+009B) and a
// right-to-left override.
const std::string kBashPrints = "\x1b[1A\x1b[2Kgone\x1b]0;owned\x07 \u009b2J \u202eend";
const std::string kBashPrintsEscaped = "\\e[1A\\e[2Kgone\\e]0;owned\\x07 \\u009b2J \\u202eend";
// How deskctl shows it: in $'...' (as bash reads it back), marked for its look-alikes.
const std::string kForgedNameShown =
    "zz\\e[2K\\e[1G  \\u2215var\\u2215lib\\u2215deskd\\u2215desks\\u2215alpha\\u2215plan.md\\nwhy: tidier";
const std::string kLookAlikeMark = " [look-alike of '/' in this name: not a folder separator]";
const std::string kReason = "tidier\x1b[1A\x1b[2K";

// The first byte of `text` a terminal would act on (other than newline and tab), described;
// "" when there is none. Checks C0, DEL, C1 and the bidi and invisible code points.
std::string raw_control_in(std::string_view text) {
  for (std::size_t index = 0; index < text.size(); ++index) {
    const auto byte = static_cast<unsigned char>(text[index]);
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7F) {
      return "byte " + std::to_string(byte) + " at " + std::to_string(index) + " in:\n" + std::string(text);
    }
  }
  for (const std::string_view code_point : {"\u0080", "\u0085", "\u009b", "\u009f", "\u202e", "\u200b", "\u2066"}) {
    if (text.find(code_point) != std::string_view::npos) return "a raw format code point in:\n" + std::string(text);
  }
  return {};
}

std::string script() {
  const std::string command =
      "printf '\\033[1A\\033[2Kgone\\033]0;owned\\007 \\302\\2332J \\342\\200\\256end\\n'; "
      "touch \"scratch/a\"$'\\n'\"FAKE-ENTRY.md\"; echo 'typed \x1b[2K raw'";
  const json::array calls{
      json::object{{"name", "bash"}, {"input", {{"command", command}}}},
      json::object{{"name", "list_directory"}, {"input", {{"path", "scratch"}}}},
      json::object{{"name", "propose_file_change"},
                   {"input", {{"path", kForgedName}, {"content", "plan v2\x1b]0;title\x07\n"}, {"reason", kReason}}}}};
  const json::object turn{
      {"steps", json::array{json::object{{"text", "looking\x1b[2K\x1b]0;t\x07 around"}, {"tool_calls", calls}},
                            json::object{{"text", "done"}}}}};
  return json::serialize(turn) + "\n";
}

class ServeConsoleE2eTest : public ServeE2eTest {};

TEST_F(ServeConsoleE2eTest, DeskctlPrintsWhatADeskWroteEscapedAndJsonExact) {
  ServeDaemon daemon({{"alpha", script()}});
  std::ofstream(daemon.desk_directory("alpha") + "/" + kForgedName) << "plan v1\n";
  ASSERT_NO_FATAL_FAILURE(start(daemon));

  // --- ask: the turn as it happens ---
  const auto ask = daemon.deskctl({"ask", "alpha", "look around"});
  ASSERT_EQ(ask.exit_code, 0) << describe(ask);
  EXPECT_EQ(raw_control_in(ask.output), "");
  EXPECT_EQ(raw_control_in(ask.error_output), "");
  EXPECT_THAT(ask.output, HasSubstr("looking\\e[2K\\e]0;t\\x07 around"));
  EXPECT_THAT(ask.output, HasSubstr("> bash printf"));
  EXPECT_THAT(ask.output, HasSubstr("echo 'typed \\e[2K raw'"));  // the command, as called
  EXPECT_THAT(ask.output, HasSubstr("    " + kBashPrintsEscaped + "\n"));
  EXPECT_THAT(ask.output, HasSubstr("    typed \\e[2K raw\n"));   // its output
  // list_directory showed the desk's newline name as one entry, quoted as bash reads it.
  EXPECT_THAT(ask.output, HasSubstr("    $'a\\nFAKE-ENTRY.md'\n"));
  EXPECT_THAT(ask.output, Not(HasSubstr("\nFAKE-ENTRY.md")));
  EXPECT_THAT(ask.output, HasSubstr("> propose_file_change $'zz\\e[2K\\e[1G  \\u2215var\\u2215lib"));

  // --- events: the same, from what deskd keeps ---
  const auto events = daemon.deskctl({"events", "alpha"});
  ASSERT_EQ(events.exit_code, 0) << describe(events);
  EXPECT_EQ(raw_control_in(events.output), "");
  EXPECT_THAT(events.output, HasSubstr("    " + kBashPrintsEscaped + "\n"));
  EXPECT_THAT(events.output, HasSubstr("    $'a\\nFAKE-ENTRY.md'\n"));
  // Each line's India time carries its zone.
  EXPECT_THAT(events.output, ContainsRegex("(^|\n)\\[[0-9]{2}:[0-9]{2}:[0-9]{2} IST\\] alpha: "));

  // --- --json events: every byte as the desk wrote it ---
  const auto json_events = daemon.deskctl({"--json", "events", "alpha"});
  ASSERT_EQ(json_events.exit_code, 0) << describe(json_events);
  bool saw_bash_output = false, saw_listing = false;
  std::size_t start_of_line = 0;
  for (std::size_t end; (end = json_events.output.find('\n', start_of_line)) != std::string::npos; start_of_line = end + 1) {
    const json::object event = parsed(json_events.output.substr(start_of_line, end - start_of_line));
    if (event_kind(event) != "TOOL_FINISHED") continue;
    const std::string text = event_data(event, "text");
    if (text.find(kBashPrints + "\n") != std::string::npos) saw_bash_output = true;
    if (text.find("$'a\\nFAKE-ENTRY.md'\n") != std::string::npos) saw_listing = true;
  }
  EXPECT_TRUE(saw_bash_output) << json_events.output;
  EXPECT_TRUE(saw_listing) << json_events.output;  // the model's own text holds the quoted name

  // --- proposals: the path quoted and marked, reason and diff escaped ---
  const auto json_proposals = daemon.deskctl({"--json", "proposals", "alpha"});
  ASSERT_EQ(json_proposals.exit_code, 0) << describe(json_proposals);
  const json::object listing = parsed(json_proposals.output);
  ASSERT_TRUE(listing.contains("proposals") && listing.at("proposals").is_array()) << json_proposals.output;
  ASSERT_EQ(listing.at("proposals").as_array().size(), 1u) << json_proposals.output;
  const json::object& proposal = listing.at("proposals").as_array()[0].as_object();
  const std::string path = field(proposal, "path");
  ASSERT_TRUE(path.ends_with(kForgedName)) << path;  // exact: nothing escaped in JSON
  EXPECT_EQ(field(proposal, "reason"), kReason);
  EXPECT_THAT(field(proposal, "diff"), HasSubstr("+plan v2\x1b]0;title\x07\n"));

  const std::string shown_path = "$'" + path.substr(0, path.size() - kForgedName.size()) + kForgedNameShown + "'" + kLookAlikeMark;
  const auto proposals = daemon.deskctl({"proposals", "alpha"});
  ASSERT_EQ(proposals.exit_code, 0) << describe(proposals);
  EXPECT_EQ(raw_control_in(proposals.output), "");
  EXPECT_THAT(proposals.output, HasSubstr("\n  " + shown_path + "\n  why: tidier\\e[1A\\e[2K\n"));
  EXPECT_THAT(proposals.output, HasSubstr("+plan v2\\e]0;title\\x07\n"));
  EXPECT_THAT(proposals.output, ContainsRegex(" alpha  [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} IST\n"));
  // The diff's header names the file in git's quotes: its newline cannot start a line.
  EXPECT_THAT(proposals.output, HasSubstr("\n--- \"a/"));
  EXPECT_THAT(proposals.output, HasSubstr("zz\\033[2K\\033[1G  "));
  // No line of it starts the way a forged one would.
  EXPECT_THAT(proposals.output, Not(HasSubstr("\nwhy: tidier")));

  const std::string id = field(proposal, "id");
  const auto reject = daemon.deskctl({"reject", id});
  ASSERT_EQ(reject.exit_code, 0) << describe(reject);
  EXPECT_EQ(reject.output, "Proposal " + id + " rejected: " + shown_path + "\n");
  EXPECT_EQ(raw_control_in(reject.output), "");

  const auto decided = daemon.deskctl({"events", "alpha"});
  EXPECT_EQ(raw_control_in(decided.output), "");
  EXPECT_THAT(decided.output, HasSubstr("rejected by"));
  EXPECT_THAT(decided.output, HasSubstr("(" + shown_path + ")\n"));
}

}  // namespace
}  // namespace deskd::e2e
