#pragma once
// Who may use the web page over TCP (docs/WEB.md): the long-lived token deskd keeps in
// <state folder>/web.token (0600, deskd's), accepted as `Authorization: Bearer`; one-time
// login codes that `deskctl web-url` hands out, each exchanged once for a session; and the
// sessions, each with its CSRF value. Every secret is compared in constant time and none
// is ever put in a log line, an event or an error.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"

namespace deskd::web {

/// How long a login code from `deskctl web-url` may wait for its one login.
inline constexpr std::chrono::seconds kLoginCodeLifetime{300};
/// How long a session lasts from its login.
inline constexpr std::chrono::hours kSessionLifetime{12};
/// How many unused login codes and live sessions are kept; past that the oldest goes.
inline constexpr std::size_t kMaximumLoginCodes = 64;
inline constexpr std::size_t kMaximumSessions = 256;

/// Whether `a` and `b` are equal, taking the same time whatever their bytes (their
/// lengths aside, which are public: every secret here has one length).
bool same_secret(std::string_view a, std::string_view b);

/// `bytes` bytes from OpenSSL's generator as lower-case hex; refused when it has none.
Result<std::string> secret_hex(std::size_t bytes);

/// The token in `file`, or a new one written there (mode 0600) when there is none. A file
/// that is not a regular file of deskd's own, is open to others, or holds no token is
/// refused: deskd will not trust (or overwrite) a token someone else could have read.
Result<std::string> load_or_make_token(const std::filesystem::path& file);

struct WebSession {
  std::string id;    ///< the cookie's value
  std::string csrf;  ///< what every POST of this session carries in X-Deskd-Csrf
  Clock::TimePoint expires;
};

/// The token, the login codes and the sessions. Used on the event loop only.
class WebLogins {
 public:
  WebLogins(std::string token, const Clock& clock) : token_(std::move(token)), clock_(clock) {}

  /// Whether `presented` is the token.
  bool is_token(std::string_view presented) const;
  /// A new one-time login code, good for kLoginCodeLifetime.
  Result<std::string> mint_login_code();
  /// A new session when `code` is an unused, unexpired login code (which is then used up).
  std::optional<WebSession> redeem_login_code(std::string_view code);
  /// The live session whose id is `id`.
  const WebSession* find_session(std::string_view id);

 private:
  std::string token_;
  const Clock& clock_;
  std::map<std::string, Clock::TimePoint> codes_;  // code → when it expires
  std::map<std::string, WebSession> sessions_;     // by id
  void forget_expired();
};

}  // namespace deskd::web
