#pragma once
// The one table of event kinds: each kind's name, who writes it to the desk's journal (or
// why nobody does), how loudly deskd's log tells it, whether it ends a turn, and its text for
// `deskctl`. Code publishes kinds only through the constants below (a test checks it), so a
// kind that is not in this table cannot be published. To add a kind, add one row.
//
// Journaled by:
//   desk       DeskCore::publish writes it as it publishes (a refused line: JOURNAL_WRITE_FAILED)
//   submit     DeskRuntime::submit writes and fsyncs it before acknowledging the trigger
//   daemon     published outside a desk's runtime (its schedules, proposals, a desk that could
//              not start): the daemon's bus sink writes it into the desk's journal
//   nobody     never journaled; the last column says why
// Ends turn: whether, published for a trigger (data: trigger), it says that the trigger's
// turn (or the answer to its /command) is over, so that who waits for it stops waiting
// (deskctl ask, deskd run, the journal's scan after a crash; ends_turn below):
//   yes              it is over
//   unless_rollover  over, unless its data says "rollover": true: a failed day rollover is
//                    told as TURN_FAILED before the turn it precedes, and that turn still runs
//   no               it ends nothing
// deskctl text: "" = bookkeeping, shown only by `deskctl follow --all`. Otherwise a template:
//   {at}            "[hh:mm:ss] desk: " (desk/subagent-id for a subagent's event)
//   {field}         the data field as text on one line (strings as they are, anything else
//                   as JSON)
//   {field:prose}   the field's text with its line breaks and tabs kept (a model's words)
//   {field:path}    the field as a path, quoted when unusual (base/terminal_text.h)
//   {field:lines N} the field's text indented, at most N lines, on lines of its own
//   {field:short}   a tool's input, short: its command, path or job id, else its JSON
// Every field's text is the desk's to choose, so all of them are shown through
// base/terminal_text.h: what a terminal would obey (ESC, controls, bidi and invisible code
// points) comes out escaped, and a line break only where the filter keeps lines.
//   {field:if TEXT} TEXT when the field is true
//   {field:given TEXT} TEXT, with % replaced by the field's text, when the field is there
// A line break ends the text when it does not end with one.

#include <boost/json/object.hpp>

#include <optional>
#include <span>
#include <string_view>

namespace deskd::desk {

enum class Journaling { desk, submit, daemon, nobody };
enum class EventLogLevel { debug, info, warn };
enum class TurnEnd { no, yes, unless_rollover };

// clang-format off
#define DESKD_EVENT_KINDS(KIND) \
  /*   constant                 name                         journaled by  log    ends turn        deskctl text;  why not journaled */ \
  KIND(kDeskStarted,            "DESK_STARTED",              desk,   info,  no,              "{at}desk started", "") \
  KIND(kDeskStopped,            "DESK_STOPPED",              desk,   info,  no,              "{at}desk stopped", "") \
  KIND(kDeskFailed,             "DESK_FAILED",               daemon, warn,  no,              "{at}desk failed: {error}", "") \
  /* /pause and /resume as handled (data: trigger): a restart starts the desk as the last one \
     left it. Flushed to disk before the command is answered. */ \
  KIND(kDeskPaused,             "DESK_PAUSED",               desk,   info,  no,              "", "") \
  KIND(kDeskResumed,            "DESK_RESUMED",              desk,   info,  no,              "", "") \
  KIND(kTriggerAccepted,        "TRIGGER_ACCEPTED",          submit, debug, no,              "", "") \
  KIND(kTriggerQueued,          "TRIGGER_QUEUED",            desk,   debug, no,              "", "") \
  KIND(kTriggerFinished,        "TRIGGER_FINISHED",          desk,   debug, yes,             "", "") \
  /* After a restart: a trigger run again, and why (data: trigger, reason). */ \
  KIND(kTriggerRedelivered,     "TRIGGER_REDELIVERED",       desk,   warn,  no,              "", "") \
  KIND(kTurnStarted,            "TURN_STARTED",              desk,   info,  no,              "{at}turn started", "") \
  KIND(kTurnFinished,           "TURN_FINISHED",             desk,   info,  yes,             "{at}turn finished{cut:given , but its reply was cut (%)}: {reply:prose}", "") \
  /* A reply cut by a limit before the model finished it (data: reason, max_tokens, continuing, limit, advice). */ \
  KIND(kModelReplyCut,          "MODEL_REPLY_CUT",           desk,   warn,  no,              "{at}the model's reply was cut at {limit}; {advice}", "") \
  KIND(kTurnFailed,             "TURN_FAILED",               desk,   warn,  unless_rollover, "{at}turn failed: {error}", "") \
  KIND(kTurnStopped,            "TURN_STOPPED",              desk,   info,  yes,             "{at}turn stopped ({reason})", "") \
  /* A spend cap ([desk.budget]) stopped the turn before a model call, or answered a trigger at \
     once (data: trigger, cap, value, spent, reserved, asked, resets, reason; amounts in the \
     cap's unit: dollars, or tokens for daily_tokens). */ \
  KIND(kBudgetReached,          "BUDGET_REACHED",            desk,   warn,  yes,             "{at}budget reached: {reason}", "") \
  KIND(kModelText,              "MODEL_TEXT",                desk,   debug, no,              "{at}{text:prose}", "") \
  KIND(kModelRetrying,          "MODEL_RETRYING",            desk,   debug, no,              "{at}the model call failed and is retried: {reason}", "") \
  KIND(kToolCalled,             "TOOL_CALLED",               desk,   debug, no,              "{at}> {tool} {input:short}", "") \
  KIND(kToolFinished,           "TOOL_FINISHED",             desk,   debug, no,              "{is_error:if   refused or failed:\n}{text:lines 12}", "") \
  KIND(kSteeringQueued,         "STEERING_QUEUED",           desk,   debug, no,              "{at}message queued for the running turn's next tool round", "") \
  KIND(kSteeringDelivered,      "STEERING_DELIVERED",        desk,   debug, no,              "{at}message delivered to the running turn", "") \
  KIND(kCommandAnswered,        "COMMAND_ANSWERED",          desk,   debug, yes,             "{at}{command}:\n{reply:lines 1000}", "") \
  KIND(kSessionRolledOver,      "SESSION_ROLLED_OVER",       desk,   info,  no,              "{at}new session ({reason})", "") \
  KIND(kSessionCompacted,       "SESSION_COMPACTED",         desk,   debug, no,              "{at}the session was compacted: {messages_summarised} older messages summarised", "") \
  KIND(kSessionCompactionFailed,"SESSION_COMPACTION_FAILED", desk,   warn,  no,              "{at}the session could not be compacted: {error}", "") \
  /* A subagent's life (data: subagent, task; when finished: state, reply or error, turns, tokens). */ \
  KIND(kSubagentStarted,        "SUBAGENT_STARTED",          desk,   info,  no,              "{at}subagent {subagent} started: {task}", "") \
  KIND(kSubagentFinished,       "SUBAGENT_FINISHED",         desk,   info,  no,              "{at}subagent {subagent} {state}", "") \
  KIND(kScheduleMissed,         "SCHEDULE_MISSED",           daemon, warn,  no,              "{at}schedule {schedule} missed: {reason}", "") \
  /* checked_until could not be saved: after a restart a firing may be missed or run twice. */ \
  KIND(kScheduleStateNotSaved,  "SCHEDULE_STATE_NOT_SAVED",  daemon, warn,  no,              "{at}the schedule state could not be saved: {reason}", "") \
  /* The desk's egress proxy refused a request (data: host, port, why; unreported_before when \
     the rate limit held some back). Published by the proxy outside the runtime. */ \
  KIND(kNetworkRefused,         "NETWORK_REFUSED",           daemon, warn,  no,              "{at}network refused {host}:{port}: {why}", "") \
  /* Something of the desk refused by one of its enforcers (data: enforcer, what, details, rule, pid, comm, \
     exe, process, trigger, tool_call, count; folded (= count) on the record that tells the repeats \
     of a fold window after its first record; \
     dropped_before when the per-minute cap held some back): runner/desk/refusal_recorder.h. */ \
  KIND(kRefused,                "REFUSED",                   daemon, warn,  no,              "{at}refused by {enforcer}: {what}{process:given  (%)} \u2014 {rule}{folded:given  (% more times)}", "") \
  /* A call through a desk's API gate, once answered (data: api, method, url, rule, outcome, status). \
     Published by the gate outside the runtime; every step is in the desk's ledger too. */ \
  KIND(kApiCall,                "API_CALL",                  daemon, debug, no,              "{at}api {api}: {method} {url} {outcome} ({status})", "") \
  /* The API gate refused a call (data: api, method, url, rule, why; unreported_before when the \
     publisher's rate limit held some back, as the egress proxy's reports do). */ \
  KIND(kApiRefused,             "API_REFUSED",               daemon, warn,  no,              "{at}api {api} refused {method} {url}: {why}", "") \
  /* An `ask` rule holds a call for a person (data: approval, api, method, url, summary, sha256, \
     expires_at); unanswered by expires_at, it is denied. */ \
  KIND(kApiCallAwaitingApproval,"API_CALL_AWAITING_APPROVAL",daemon, warn,  no,              "{at}api {api}: {method} {url} waits for your approval until {expires_at}\n    {summary}\n    sha256 {sha256}\n    run `deskctl approve {approval}` or `deskctl deny {approval}`", "") \
  KIND(kProposalAccepted,       "PROPOSAL_ACCEPTED",         daemon, info,  no,              "{at}proposal {proposal} accepted by {by} ({path:path})", "") \
  KIND(kProposalRejected,       "PROPOSAL_REJECTED",         daemon, info,  no,              "{at}proposal {proposal} rejected by {by} ({path:path})", "") \
  KIND(kProposalRefused,        "PROPOSAL_REFUSED",          daemon, warn,  no,              "{at}proposal {proposal} refused: {error}", "") \
  /* A journal line that could not be read (data: file, line, error; trigger, recovered). */ \
  KIND(kJournalDamaged,         "JOURNAL_DAMAGED",           desk,   warn,  no,              "", "") \
  /* A line the journal could not take (data: event, kind, error, trigger when it names one). */ \
  KIND(kJournalWriteFailed,     "JOURNAL_WRITE_FAILED",      nobody, warn,  no,              "", \
       "the journal is what refused the line: followers are told, and a held line is written later") \
  /* The journal rewritten with only what a restart needs (data: file, bytes_before, ...). */ \
  KIND(kJournalCompacted,       "JOURNAL_COMPACTED",         desk,   info,  no,              "", "")
// clang-format on

/// The kinds deskd publishes, by constant.
namespace event_kind {
#define DESKD_EVENT_KIND_CONSTANT(constant, name, journaling, log, ends, text, why_not) \
  inline constexpr const char* constant = name;
DESKD_EVENT_KINDS(DESKD_EVENT_KIND_CONSTANT)
#undef DESKD_EVENT_KIND_CONSTANT
}  // namespace event_kind

/// One row of the table.
struct EventKindInfo {
  std::string_view name;
  Journaling journaling;
  EventLogLevel log_level;
  TurnEnd ends_turn;
  std::string_view text;             ///< the deskctl template ("" = bookkeeping)
  std::string_view why_not_journaled;  ///< set exactly when journaling is nobody
};

/// Every row, in the table's order.
std::span<const EventKindInfo> event_kinds();
/// The row for `name`; nullopt for a kind deskd does not publish.
std::optional<EventKindInfo> find_event_kind(std::string_view name);
/// Who journals `kind`; nobody for a kind not in the table.
Journaling journaling_of(std::string_view kind);
/// Whether an event of `kind` with `data` ends the turn of the trigger its data names (the
/// table's "ends turn" column, with a rollover's TURN_FAILED ending nothing). Whose trigger
/// it is, is for the caller to check.
bool ends_turn(std::string_view kind, const boost::json::object& data);
/// The column itself; no for a kind not in the table. For who cannot read the data (a
/// damaged journal line): unless_rollover then means "unknown".
TurnEnd turn_end_of(std::string_view kind);

}  // namespace deskd::desk
