#pragma once
// An [[api]] of deskd.toml as the API gate enforces it: the origins it covers, the
// credentials it applies (each known to the desk only as a placeholder), the fixed fields it
// adds, and its rules. Pure logic, no I/O and no clock of its own: the config builds an
// ApiSpec (runner/config/config_api.cpp), the gate (runner/egress/api_gate.h) asks an
// ApiRuleBook about each request, with the moment given to it.
//
// Rules: the first rule whose methods and path pattern match decides; a request no rule
// matches is denied (default deny). A matching `allow` or `ask` rule still refuses a request
// outside its time window, failing one of its body checks, or over its rate.

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace deskd::policy {

/// scheme://host:port of an API ("https" or "http"; host lower case; port explicit).
struct ApiOrigin {
  std::string scheme;
  std::string host;
  std::uint16_t port = 0;

  std::string text() const;  ///< "https://api.kite.trade" (the port only when not the scheme's default)
  bool operator==(const ApiOrigin&) const = default;
};

/// "https://api.kite.trade", "http://host:8080"; no path, query or user. An error sentence
/// when `text` is not one.
Result<ApiOrigin> parse_api_origin(std::string_view text);

/// How a credential is applied to a request that passed the rules.
enum class CredentialPlacement {
  header,          ///< header `name`: template_text with {key} (the placeholder replaced where the desk wrote it)
  query,           ///< query parameter `name`
  basic_user,      ///< the user of HTTP basic auth (another credential of the API gives the password)
  basic_password,  ///< the password of HTTP basic auth
};

struct ApiCredential {
  /// The variable of the desk's environment that holds the placeholder ("KITE_API_KEY").
  std::string variable;
  /// The secret, read by deskd when the desk starts; hidden from every desk.
  std::filesystem::path key_file;
  CredentialPlacement placement = CredentialPlacement::header;
  std::string name;                   ///< header or query parameter name (placement header, query)
  std::string template_text = "{key}";  ///< placement header: the header's value
  /// Whether the placeholder is also replaced in the request's body (besides its request
  /// target and headers, where it always is).
  bool in_body = false;

  bool operator==(const ApiCredential&) const = default;
};

/// A fixed field the gate adds to the requests it matches (an exchange-assigned algo id):
/// replacing what the desk wrote there.
struct ApiAddedField {
  enum class Kind { header, json, form };
  Kind kind = Kind::header;
  std::string name;   ///< header name, a JSON body's top-level member, or a form field
  std::string value;  ///< json: the string value given
  std::vector<std::string> methods;  ///< upper case; empty: any
  std::string path = "/**";

  bool operator==(const ApiAddedField&) const = default;
};

enum class ApiAction { allow, deny, ask };
std::string_view api_action_name(ApiAction action);  ///< "allow", "deny", "ask"

struct ApiRate {
  enum class Per { second, minute, day };
  std::uint32_t count = 0;  ///< at most this many requests passed by the rule...
  Per per = Per::second;    ///< ...in any second or minute (sliding), or India calendar day
  std::string text;         ///< "10/second", as written

  bool operator==(const ApiRate&) const = default;
};

/// When a rule's requests may pass, in India time.
struct ApiTimeWindow {
  bool nse_session = false;  ///< NSE's regular session (09:15-15:30 on a trading day)
  /// Explicit ranges [start, end) in minutes since India midnight ("09:00-15:30").
  std::vector<std::pair<int, int>> ranges;
  bool market_days_only = false;  ///< the ranges hold on NSE trading days only
  std::string text;               ///< as written, for refusals

  bool operator==(const ApiTimeWindow&) const = default;
};

/// One check of a request body: `field <op> value`, or `field * field <op> value`.
struct BodyCheck {
  enum class Op { less_or_equal, greater_or_equal, equal, in };
  std::vector<std::string> field;   ///< a dotted path into a JSON body ("order.quantity"), or a form field
  std::vector<std::string> factor;  ///< the second field of a product; empty when none
  Op op = Op::equal;
  boost::json::value value;  ///< a number or string; an array for `in`
  std::string text;          ///< as written: "price * quantity <= 200000"

  bool operator==(const BodyCheck&) const = default;
};

/// "quantity <= 100", "price * quantity <= 200000", "exchange in [\"NSE\", \"BSE\"]",
/// "product == \"CNC\"". An error sentence naming what is wrong.
/// Judged against a body (ApiRuleBook::decide): numbers compare as doubles; a string (a form
/// value, a JSON string) compared with a number must be one whole finite number; a missing
/// field, a form field given twice or a JSON object with a key twice fails.
Result<BodyCheck> parse_body_check(std::string_view text);

struct ApiRule {
  std::string name;                  ///< as written, or "rule N" (1-based)
  std::vector<std::string> methods;  ///< upper case; empty: any
  /// Segments separated by '/': a literal segment, `*` (exactly one segment) or `**` (any
  /// number of segments, none included). Matched against the path without its query.
  std::string path = "/**";
  ApiAction action = ApiAction::deny;
  std::optional<ApiRate> rate;
  std::optional<ApiTimeWindow> window;
  std::vector<BodyCheck> checks;

  bool operator==(const ApiRule&) const = default;
};

/// The largest body the gate reads to check (a larger one is refused with 413).
inline constexpr std::size_t kDefaultApiBodyBytes = std::size_t{1} << 20;

/// One [[api]].
struct ApiSpec {
  std::string name;
  std::vector<ApiOrigin> origins;
  /// Where deskd connects for these origins instead of resolving them (the operator's pin:
  /// "127.0.0.1" for a local gateway). Empty: the host's resolver, public addresses only.
  std::vector<std::string> addresses;
  /// Verify the upstream server against this CA file instead of the system store.
  std::optional<std::filesystem::path> ca_file;
  std::vector<ApiCredential> credentials;
  std::vector<ApiAddedField> added_fields;
  std::vector<ApiRule> rules;
  std::size_t maximum_body_bytes = kDefaultApiBodyBytes;
  std::chrono::seconds approval_timeout{60};

  bool operator==(const ApiSpec&) const = default;
};

/// Whether `path` (no query, as the desk sent it) matches `pattern` (see ApiRule::path).
/// Segments are compared percent-decoded ("/%61dmin" meets "/admin"). A path a server could
/// read in another shape matches no pattern, not even "/**", so no rule takes it and it is
/// denied: a "." or ".." segment (also encoded, "%2e%2e", or with ";" parameters, "..;"),
/// an empty segment ("//"), an encoded '/' or '\' (%2F, %5C, any case), a raw '\', a control
/// character, a malformed %-escape, or no leading '/'.
bool api_path_matches(std::string_view pattern, std::string_view path);
/// Whether a path pattern is well formed; an error sentence when not.
Result<void> check_api_path_pattern(std::string_view pattern);

/// The moment a request is decided at, as the rules need it.
struct ApiMoment {
  std::chrono::system_clock::time_point now;
  int india_minute_of_day = 0;  ///< 0..1439
  bool trading_day = false;     ///< an NSE trading day (a weekday, not a holiday)
  std::int64_t india_day = 0;   ///< days since the epoch, in India (the per-day rate's day)
};

/// What the rules say of one request.
struct ApiDecision {
  const ApiRule* rule = nullptr;  ///< the rule that matched; nullptr: none (default deny)
  ApiAction action = ApiAction::deny;
  /// Why the request is refused ("no rule allows POST /orders", "outside nse_session",
  /// "quantity is 500, above 100", "over 10/second"); empty when action is allow or ask.
  std::string why;
};

/// A request as the rules see it.
struct ApiRequestView {
  std::string_view method;        ///< upper case
  std::string_view path;          ///< without the query
  std::string_view content_type;  ///< the header's value ("" when none)
  std::string_view body;
};

/// The rules of one API with their rate counters. Not thread-safe: one gate's loop owns it.
class ApiRuleBook {
 public:
  explicit ApiRuleBook(const ApiSpec& spec) : spec_(&spec) {}

  /// Decides `request` at `moment`: the rule's window, then its checks, then its rate; a
  /// request the rule passes (allow or ask) counts against its rate, a refused one does not.
  ApiDecision decide(const ApiRequestView& request, const ApiMoment& moment);

 private:
  const ApiSpec* spec_;
  /// Per rule index: the times of the requests it passed within the rate's period.
  std::map<std::size_t, std::deque<std::chrono::system_clock::time_point>> passed_;
  std::map<std::size_t, std::pair<std::int64_t, std::uint32_t>> passed_today_;  ///< per-day rates
};

/// A readable summary of a JSON or form body's fields for a person deciding
/// ("symbol=INFY, quantity=10, price=1500.5"), at most `maximum_bytes`; for other bodies,
/// their size and type.
std::string summarise_api_body(std::string_view content_type, std::string_view body, std::size_t maximum_bytes = 512);

/// The fields added to a request matching `method` and `path`, in the spec's order.
std::vector<const ApiAddedField*> added_fields_for(const ApiSpec& spec, std::string_view method, std::string_view path);

/// `body` with the json or form fields among `fields` set (replacing a member or field of the
/// same name; header fields are skipped). An error sentence when such a field is to be added
/// and the body is not a JSON object (content type application/json) or a form
/// (application/x-www-form-urlencoded); an empty body counts as an empty one of the kind
/// the content type names.
Result<std::string> with_added_body_fields(std::string_view content_type, std::string_view body,
                                           const std::vector<const ApiAddedField*>& fields);

}  // namespace deskd::policy
