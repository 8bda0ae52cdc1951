// How deskctl shows an event: its India time with the zone ("[09:14:05 IST]"); a reply cut
// by a limit as the cut itself (MODEL_REPLY_CUT) and the turn that finished with it, never
// as a plain "turn finished"; and what a desk wrote into an event escaped, never obeyed by
// the terminal.

#include "runner/events/event_text.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "base/terminal_text.h"

namespace deskd::desk {
namespace {

namespace json = boost::json;

json::object event(const char* kind, json::object data) {
  return {{"id", "e-1"}, {"time", "2026-11-30T09:14:05+05:30"}, {"desk", "nifty"}, {"kind", kind}, {"data", std::move(data)}};
}

TEST(EventTextTest, ACutReplyIsShownAsCut) {
  EXPECT_EQ(event_text(event("MODEL_REPLY_CUT", {{"reason", "max_tokens"},
                                                 {"max_tokens", 8192},
                                                 {"continuing", false},
                                                 {"limit", "its max_tokens limit (8192)"},
                                                 {"advice", "raise max_tokens or ask for less"}})),
            "[09:14:05 IST] nifty: the model's reply was cut at its max_tokens limit (8192); raise max_tokens or ask for less\n");
  EXPECT_EQ(event_text(event("MODEL_REPLY_CUT", {{"reason", "model_context_window_exceeded"},
                                                 {"max_tokens", 8192},
                                                 {"continuing", false},
                                                 {"limit", "the model's context window (model_context_window_exceeded)"},
                                                 {"advice", "/rollover starts a fresh session"}})),
            "[09:14:05 IST] nifty: the model's reply was cut at the model's context window (model_context_window_exceeded); "
            "/rollover starts a fresh session\n");
  EXPECT_EQ(event_text(event("TURN_FINISHED", {{"trigger", "t-1"}, {"reply", "Levels: 24150, sup"}, {"cut", "max_tokens"}})),
            "[09:14:05 IST] nifty: turn finished, but its reply was cut (max_tokens): Levels: 24150, sup\n");
  EXPECT_EQ(event_text(event("TURN_FINISHED", {{"trigger", "t-1"}, {"reply", "Done."}})), "[09:14:05 IST] nifty: turn finished: Done.\n");
}

TEST(EventTextTest, WhatADeskWroteIsShownEscaped) {
  // A model's words and a tool's output keep their lines; nothing a terminal obeys survives.
  EXPECT_EQ(event_text(event("MODEL_TEXT", {{"text", "first\n\x1b[1A\x1b[2Ksecond\x1b]0;owned\x07"}})),
            "[09:14:05 IST] nifty: first\n\\e[1A\\e[2Ksecond\\e]0;owned\\x07\n");
  EXPECT_EQ(event_text(event("TOOL_FINISHED", {{"is_error", false}, {"text", "out\tput\r\x1b[2Kforged\n\u202elast"}})),
            "    out\tput\\r\\e[2Kforged\n    \\u202elast\n");
  // One-line fields stay on one line: a newline cannot start a forged event.
  EXPECT_EQ(event_text(event("TURN_FAILED", {{"error", "no\n[09:14:06] nifty: turn finished: fine"}})),
            "[09:14:05 IST] nifty: turn failed: no\\n[09:14:06] nifty: turn finished: fine\n");
  EXPECT_EQ(event_text(event("TOOL_CALLED", {{"tool", "bash"}, {"input", {{"command", "printf '\x1b[2J'\necho hi"}}}})),
            "[09:14:05 IST] nifty: > bash printf '\\e[2J'\\necho hi\n");
  // Paths are quoted and a look-alike of '/' is marked.
  EXPECT_EQ(event_text(event("TOOL_CALLED", {{"tool", "read_file"}, {"input", {{"path", "zz\x1b[2K\u2215plan.md"}}}})),
            "[09:14:05 IST] nifty: > read_file $'zz\\e[2K\\u2215plan.md'" + std::string(kLookAlikeSlashMark) + "\n");
  EXPECT_EQ(event_text(event("PROPOSAL_ACCEPTED", {{"proposal", "p-1"}, {"by", "uid 0"}, {"path", "/d/a\nb.md"}})),
            "[09:14:05 IST] nifty: proposal p-1 accepted by uid 0 ($'/d/a\\nb.md')\n");
  // Ordinary text, non-ASCII included, is as it was.
  EXPECT_EQ(event_text(event("MODEL_TEXT", {{"text", "स्तर: 24150\nCafé ∕ done"}})), "[09:14:05 IST] nifty: स्तर: 24150\nCafé ∕ done\n");
}

}  // namespace
}  // namespace deskd::desk

namespace deskd::desk {
namespace {

// The API gate's events: a call held for approval tells the person what to run, and what the
// desk put in the URL or the body's summary reaches the terminal escaped.
TEST(EventTextTest, TheApiGatesEventsTellWhatToDoAndEscapeTheDesksText) {
  EXPECT_EQ(event_text(event("API_CALL", {{"api", "kite"},
                                          {"method", "GET"},
                                          {"url", "https://api.kite.trade/quote?i=NSE:INFY"},
                                          {"rule", "quotes"},
                                          {"outcome", "answered"},
                                          {"status", 200}})),
            "[09:14:05 IST] nifty: api kite: GET https://api.kite.trade/quote?i=NSE:INFY answered (200)\n");
  EXPECT_EQ(event_text(event("API_CALL_AWAITING_APPROVAL", {{"approval", "ap-0123456789ab"},
                                                            {"api", "kite"},
                                                            {"method", "POST"},
                                                            {"url", "https://api.kite.trade/orders/regular"},
                                                            {"summary", "quantity=10\x1b[2K price=1500"},
                                                            {"sha256", "ab12"},
                                                            {"expires_at", "2026-11-30T09:15:05+05:30"}})),
            "[09:14:05 IST] nifty: api kite: POST https://api.kite.trade/orders/regular waits for your approval until "
            "2026-11-30T09:15:05+05:30\n    quantity=10\\e[2K price=1500\n    sha256 ab12\n"
            "    run `deskctl approve ap-0123456789ab` or `deskctl deny ap-0123456789ab`\n");
  EXPECT_EQ(event_text(event("API_REFUSED", {{"api", "kite"},
                                             {"method", "DELETE"},
                                             {"url", "https://api.kite.trade/orders/1"},
                                             {"rule", ""},
                                             {"why", "no rule allows it"}})),
            "[09:14:05 IST] nifty: api kite refused DELETE https://api.kite.trade/orders/1: no rule allows it\n");
}

}  // namespace
}  // namespace deskd::desk
