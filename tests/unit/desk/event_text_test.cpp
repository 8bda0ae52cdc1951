// How deskctl shows a reply cut by a limit: the cut itself (MODEL_REPLY_CUT) and the turn
// that finished with it, never as a plain "turn finished".

#include "runner/desk/event_text.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

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
            "[09:14:05] nifty: the model's reply was cut at its max_tokens limit (8192); raise max_tokens or ask for less\n");
  EXPECT_EQ(event_text(event("MODEL_REPLY_CUT", {{"reason", "model_context_window_exceeded"},
                                                 {"max_tokens", 8192},
                                                 {"continuing", false},
                                                 {"limit", "the model's context window (model_context_window_exceeded)"},
                                                 {"advice", "/rollover starts a fresh session"}})),
            "[09:14:05] nifty: the model's reply was cut at the model's context window (model_context_window_exceeded); "
            "/rollover starts a fresh session\n");
  EXPECT_EQ(event_text(event("TURN_FINISHED", {{"trigger", "t-1"}, {"reply", "Levels: 24150, sup"}, {"cut", "max_tokens"}})),
            "[09:14:05] nifty: turn finished, but its reply was cut (max_tokens): Levels: 24150, sup\n");
  EXPECT_EQ(event_text(event("TURN_FINISHED", {{"trigger", "t-1"}, {"reply", "Done."}})), "[09:14:05] nifty: turn finished: Done.\n");
}

}  // namespace
}  // namespace deskd::desk
