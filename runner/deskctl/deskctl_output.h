#pragma once
// Internal to runner/deskctl: what deskctl prints. Every field deskd sends back was chosen by
// a desk or a person (names, paths, reasons, errors), so each is shown through
// base/terminal_text.h, never obeyed; --json output never goes through these.

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <string>
#include <vector>

#include "base/result.h"

namespace deskd::control::deskctl {

/// deskctl's exit statuses (its --help and deskctl(1) list them).
inline constexpr int kOk = 0, kRefused = 1, kUsage = 2, kUnreachable = 3, kReplyCut = 4;

/// A field as text: strings as they are, anything else as JSON; "" when absent or null.
std::string text_of(const boost::json::object& object, const char* key);
/// A field on one line, safe for a terminal.
std::string shown(const boost::json::object& object, const char* key);
/// A field that is text of many lines (a diff, usage, an error listing problems), its lines kept.
std::string shown_lines(const boost::json::object& object, const char* key);
/// A field that is a time (ISO 8601 in India time): "2026-11-30 09:14:05 IST".
std::string shown_time(const boost::json::object& object, const char* key);
/// A field that is a path: quoted when unusual, marked when it holds a look-alike of '/'.
std::string shown_path(const boost::json::object& object, const char* key);

/// Whether a reply says "ok": true.
bool is_ok(const boost::json::object& reply);
/// Prints deskd's refusal (and the reply itself with --json); returns kRefused.
int refused(const boost::json::object& reply, bool json_output);
/// Prints why deskd cannot be reached; returns kUnreachable.
int unreachable(const Error& error);
/// The words of a message, joined by spaces.
std::string joined(const std::vector<std::string>& words);

// Each one-reply command's printer: the reply (the whole line, "ok": true) as a person reads
// it; each returns the exit status.
int print_desks_reply(const boost::json::object& reply);
int print_status_reply(const boost::json::object& reply);
int print_trigger_reply(const boost::json::object& reply);
int print_commands_reply(const boost::json::object& reply);
int print_proposals_reply(const boost::json::object& reply);
int print_decision_reply(const boost::json::object& reply);
/// The waiting API calls, a table: id, desk, api, method and URL, summary, expires in.
int print_approvals_reply(const boost::json::object& reply);
/// `refusals`: each REFUSED event as deskctl events shows it, with its details, trigger and tool call.
int print_refusals_reply(const boost::json::object& reply);
/// `metrics`: the Prometheus text, its lines kept (each shown safe for a terminal).
int print_metrics_reply(const boost::json::object& reply);
int print_spend_reply(const boost::json::object& reply);
int print_approval_decision_reply(const boost::json::object& reply);
/// The ledger's lines, escaped; with a verification, its verdict (kRefused when not intact).
int print_ledger_reply(const boost::json::object& reply);
/// The spend caps: each cap, spent, reserved, left, and when the daily caps reset.
int print_budget_reply(const boost::json::object& reply);
/// The one-time login link, alone on its line.
int print_web_url_reply(const boost::json::object& reply);
/// kRefused when a desk it meant to start could not start.
int print_reload_reply(const boost::json::object& reply);
/// For an operation that needs no printer of its own: each field but the id and "ok", as
/// "name: value" on a line of its own.
int print_reply_fields(const boost::json::object& reply);

}  // namespace deskd::control::deskctl
