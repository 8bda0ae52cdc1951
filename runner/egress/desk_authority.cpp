#include "runner/egress/desk_authority.h"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "base/unique_fd.h"
#include "runner/egress/desk_certificates.h"

namespace deskd::egress {

namespace certificates = desk_certificates;

struct DeskAuthority::Keys {
  certificates::Key key;
  certificates::Certificate certificate;
  std::string certificate_pem;
  std::vector<certificates::Host> hosts;
};

namespace {

// ALPN: the gate speaks HTTP/1.1 only. A client offering it gets it; one offering only h2
// (or anything else) gets no ALPN answer and speaks HTTP/1.1 or gives up, never h2.
int select_http1(SSL*, const unsigned char** selected, unsigned char* selected_length, const unsigned char* offered,
                 unsigned int offered_length, void*) {
  static constexpr unsigned char kHttp1[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
  for (unsigned int at = 0; at < offered_length;) {
    const unsigned int length = offered[at];
    if (at + 1 + length > offered_length) break;
    if (length == sizeof kHttp1 && std::memcmp(offered + at + 1, kHttp1, sizeof kHttp1) == 0) {
      *selected = offered + at + 1;
      *selected_length = static_cast<unsigned char>(length);
      return SSL_TLSEXT_ERR_OK;
    }
    at += 1 + length;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

Result<std::shared_ptr<boost::asio::ssl::context>> make_server_context(const certificates::Certificate& authority,
                                                                       const certificates::Leaf& leaf,
                                                                       const std::string& host) {
  std::shared_ptr<boost::asio::ssl::context> context;
  try {
    context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_server);
  } catch (const std::exception& error) {
    return Error::make(ErrorCode::internal,
                       "The TLS context for " + host + " could not be made: " + std::string(error.what()) + ".");
  }
  SSL_CTX* native = context->native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    return certificates::openssl_error("setting TLS 1.2 as the least version for " + host);
  }
  SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_alpn_select_cb(native, select_http1, nullptr);
  if (SSL_CTX_use_certificate(native, leaf.certificate.get()) != 1 ||
      SSL_CTX_add1_chain_cert(native, authority.get()) != 1 || SSL_CTX_use_PrivateKey(native, leaf.key.get()) != 1 ||
      SSL_CTX_check_private_key(native) != 1) {
    return certificates::openssl_error("giving the TLS context of " + host + " its certificate and key");
  }
  return context;
}

// Reads at most `limit` bytes of `path`; a file that is not there reads as empty.
Result<std::string> read_bounded(const std::filesystem::path& path, std::size_t limit) {
  UniqueFd fd(retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) {
    if (errno == ENOENT) return std::string();
    return Error::from_errno(errno, "The system trust bundle " + path.native() + " could not be opened");
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t count = retry_on_eintr([&] { return ::read(fd.get(), buffer, sizeof buffer); });
    if (count < 0) return Error::from_errno(errno, "The system trust bundle " + path.native() + " could not be read");
    if (count == 0) return text;
    if (text.size() + static_cast<std::size_t>(count) > limit) {
      return Error::make(ErrorCode::refused, "The system trust bundle " + path.native() + " is larger than " +
                                                 std::to_string(limit >> 20) + " MiB; it was not copied.");
    }
    text.append(buffer, static_cast<std::size_t>(count));
  }
}

}  // namespace

Result<std::shared_ptr<DeskAuthority>> DeskAuthority::create(const std::string& desk_name,
                                                             std::vector<std::string> hosts) {
  if (hosts.empty()) {
    return Error::make(ErrorCode::invalid_argument,
                       "The certificate authority of desk " + certificates::safe_name(desk_name) +
                           " was given no host to vouch for; it is made only for a desk's gated origins.");
  }
  auto keys = std::make_unique<Keys>();
  for (const auto& host : hosts) {
    DESKD_ASSIGN_OR_RETURN(auto parsed, certificates::parse_host(host));
    const bool seen = std::any_of(keys->hosts.begin(), keys->hosts.end(),
                                  [&](const certificates::Host& other) { return other.text == parsed.text; });
    if (!seen) keys->hosts.push_back(std::move(parsed));
  }
  DESKD_ASSIGN_OR_RETURN(keys->key, certificates::new_key());
  DESKD_ASSIGN_OR_RETURN(keys->certificate, certificates::make_authority(desk_name, keys->key, keys->hosts));
  DESKD_ASSIGN_OR_RETURN(keys->certificate_pem, certificates::pem_of(keys->certificate));
  return std::shared_ptr<DeskAuthority>(new DeskAuthority(std::move(keys)));
}

DeskAuthority::DeskAuthority(std::unique_ptr<Keys> keys) : keys_(std::move(keys)) {}

DeskAuthority::~DeskAuthority() = default;

const std::string& DeskAuthority::certificate_pem() const { return keys_->certificate_pem; }

Result<std::shared_ptr<boost::asio::ssl::context>> DeskAuthority::server_context(const std::string& host) {
  const std::string name = certificates::normalized_host(host);
  const auto found = std::find_if(keys_->hosts.begin(), keys_->hosts.end(),
                                  [&](const certificates::Host& known) { return known.text == name; });
  if (found == keys_->hosts.end()) {
    return Error::refusal("The desk's certificate authority vouches only for its gated hosts, and " +
                          certificates::safe_name(host) + " is not one of them.");
  }
  std::lock_guard lock(mutex_);
  if (const auto cached = contexts_.find(name); cached != contexts_.end()) return cached->second;
  DESKD_ASSIGN_OR_RETURN(auto leaf, certificates::mint_leaf(*found, keys_->key, keys_->certificate));
  DESKD_ASSIGN_OR_RETURN(auto context, make_server_context(keys_->certificate, leaf, name));
  contexts_.emplace(name, context);
  return context;
}

Result<void> write_trust_bundle(const std::filesystem::path& file, std::string_view authority_pem,
                                const std::filesystem::path& system_bundle) {
  constexpr std::size_t kSystemBundleLimit = std::size_t{8} << 20;  // Debian's is ~220 KiB
  DESKD_ASSIGN_OR_RETURN(std::string contents, read_bounded(system_bundle, kSystemBundleLimit));
  if (!contents.empty()) contents += '\n';
  contents.append(authority_pem);

  // As base/atomic_file.h does, but 0644: the desk's uid reads it through its bind mount.
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : ".";
  std::string temporary = (folder / ("." + file.filename().native() + ".XXXXXX")).native();
  UniqueFd fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "The desk's trust bundle could not be created beside " + file.native());
  const auto fail = [&](const std::string& step) {
    const int error_number = errno;
    ::unlink(temporary.c_str());
    return Error::from_errno(error_number, "The desk's trust bundle " + file.native() + " could not be " + step);
  };
  std::string_view rest = contents;
  while (!rest.empty()) {
    const ssize_t written = retry_on_eintr([&] { return ::write(fd.get(), rest.data(), rest.size()); });
    if (written < 0) return fail("written");
    rest.remove_prefix(static_cast<std::size_t>(written));
  }
  if (retry_on_eintr([&] { return ::fsync(fd.get()); }) != 0) return fail("flushed to disk");
  if (::fchmod(fd.get(), 0644) != 0) return fail("made readable (0644)");
  fd.reset();
  if (::rename(temporary.c_str(), file.c_str()) != 0) return fail("put in place");
  const UniqueFd directory(retry_on_eintr([&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (!directory || ::fsync(directory.get()) != 0) {
    return Error::from_errno(errno,
                             "The folder of the desk's trust bundle " + folder.native() + " could not be flushed");
  }
  return success();
}

}  // namespace deskd::egress
