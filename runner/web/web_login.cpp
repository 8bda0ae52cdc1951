#include "runner/web/web_login.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "base/hex.h"
#include "base/unique_fd.h"

namespace deskd::web {

namespace {

constexpr std::size_t kTokenBytes = 32;  // 64 hex digits
constexpr std::size_t kCodeBytes = 24;
constexpr std::size_t kSessionBytes = 32;

bool is_token_text(std::string_view text) {
  return text.size() == 2 * kTokenBytes &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A freshly made token: written under O_EXCL at mode 0600, so that no moment finds it wider.
Result<std::string> make_token(const std::filesystem::path& file) {
  DESKD_ASSIGN_OR_RETURN(std::string token, secret_hex(kTokenBytes));
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Error::from_errno(errno, "creating the web token " + file.native());
  const std::string line = token + "\n";
  if (retry_on_eintr([&] { return ::write(fd.get(), line.data(), line.size()); }) !=
          static_cast<ssize_t>(line.size()) ||
      ::fsync(fd.get()) != 0) {
    const int saved = errno;
    ::unlink(file.c_str());
    return Error::from_errno(saved, "writing the web token " + file.native());
  }
  return token;
}

}  // namespace

bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<std::string> secret_hex(std::size_t bytes) {
  std::vector<unsigned char> random(bytes);
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
    return Error::make(ErrorCode::system, "OpenSSL's random generator gave no bytes for a web secret.");
  }
  return hex_encode(random);
}

Result<std::string> load_or_make_token(const std::filesystem::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return make_token(file);
    return Error::from_errno(errno, "opening the web token " + file.native());
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) return Error::from_errno(errno, "reading the web token " + file.native());
  if (!S_ISREG(status.st_mode) || status.st_uid != ::geteuid() || (status.st_mode & 077) != 0) {
    return Error::make(ErrorCode::refused, "The web token " + file.native() +
                                               " is not a regular file of deskd's own with mode 0600; deskd will "
                                               "not use it. Remove it and deskd makes a new one.");
  }
  char buffer[2 * kTokenBytes + 2];
  const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
  if (count < 0) return Error::from_errno(errno, "reading the web token " + file.native());
  std::string_view text(buffer, static_cast<std::size_t>(count));
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  // The message never quotes the file's content: it may be a token with a typo.
  if (!is_token_text(text)) {
    return Error::make(ErrorCode::refused, "The web token " + file.native() +
                                               " does not hold 64 lower-case hex digits; remove it and deskd makes a "
                                               "new one.");
  }
  return std::string(text);
}

bool WebLogins::is_token(std::string_view presented) const { return same_secret(presented, token_); }

void WebLogins::forget_expired() {
  const auto now = clock_.now();
  std::erase_if(codes_, [now](const auto& code) { return code.second <= now; });
  std::erase_if(sessions_, [now](const auto& session) { return session.second.expires <= now; });
}

Result<std::string> WebLogins::mint_login_code() {
  forget_expired();
  DESKD_ASSIGN_OR_RETURN(std::string code, secret_hex(kCodeBytes));
  if (codes_.size() >= kMaximumLoginCodes) {
    codes_.erase(std::min_element(codes_.begin(), codes_.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; }));
  }
  codes_[code] = clock_.now() + kLoginCodeLifetime;
  return code;
}

std::optional<WebSession> WebLogins::redeem_login_code(std::string_view code) {
  forget_expired();
  // Every stored code is compared, each in constant time: which one matched (or how far a
  // guess got) shows in no timing.
  auto found = codes_.end();
  for (auto it = codes_.begin(); it != codes_.end(); ++it) {
    if (same_secret(it->first, code)) found = it;
  }
  if (found == codes_.end()) return std::nullopt;
  codes_.erase(found);
  auto id = secret_hex(kSessionBytes);
  auto csrf = secret_hex(kSessionBytes);
  if (!id.ok() || !csrf.ok()) return std::nullopt;
  if (sessions_.size() >= kMaximumSessions) {
    sessions_.erase(std::min_element(sessions_.begin(), sessions_.end(),
                                     [](const auto& a, const auto& b) { return a.second.expires < b.second.expires; }));
  }
  WebSession session{*id, *csrf, clock_.now() + kSessionLifetime};
  sessions_[session.id] = session;
  return session;
}

const WebSession* WebLogins::find_session(std::string_view id) {
  forget_expired();
  for (const auto& [key, session] : sessions_) {
    if (same_secret(key, id)) return &session;
  }
  return nullptr;
}

}  // namespace deskd::web
