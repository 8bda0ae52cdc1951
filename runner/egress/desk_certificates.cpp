#include "runner/egress/desk_certificates.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>

namespace deskd::egress::desk_certificates {
namespace {

constexpr long kHourSeconds = 3600;
// Within the 398 days the CA/Browser Forum allows a server certificate, as clients that
// check it (Apple's, Chrome's) would refuse a longer one even from a private root.
constexpr long kValiditySeconds = 397L * 24 * kHourSeconds;

struct BignumFree {
  void operator()(BIGNUM* number) const { BN_free(number); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};

// The canonical text of an IP address, or "" when `text` is none.
std::string address_text(const std::string& text) {
  unsigned char address[16];
  char canonical[INET6_ADDRSTRLEN];
  for (const int family : {AF_INET, AF_INET6}) {
    if (::inet_pton(family, text.c_str(), address) == 1 &&
        ::inet_ntop(family, address, canonical, sizeof canonical) != nullptr) {
      return canonical;
    }
  }
  return {};
}

bool is_dns_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  for (const char character : name) {
    if (character == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool allowed = (character >= 'a' && character <= 'z') || (character >= '0' && character <= '9') ||
                         character == '-' || character == '_';
    if (!allowed || ++label > 63) return false;
  }
  return label > 0;
}

// A random positive serial of 127 bits, as RFC 5280 asks (positive, at most 20 octets) and
// as the CA/Browser Forum asks of any serial (at least 64 random bits).
Result<void> set_random_serial(X509* certificate) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return openssl_error("drawing a random serial number");
  bytes[0] = static_cast<unsigned char>((bytes[0] & 0x7f) | 0x01);
  std::unique_ptr<BIGNUM, BignumFree> number(BN_bin2bn(bytes, sizeof bytes, nullptr));
  if (!number || BN_to_ASN1_INTEGER(number.get(), X509_get_serialNumber(certificate)) == nullptr) {
    return openssl_error("setting a serial number");
  }
  return success();
}

Result<void> add_extension(X509* certificate, X509V3_CTX& context, int nid, const std::string& value) {
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  if (extension == nullptr) return openssl_error(std::string("making the extension ") + OBJ_nid2sn(nid));
  const int added = X509_add_ext(certificate, extension, -1);
  X509_EXTENSION_free(extension);
  if (added != 1) return openssl_error(std::string("adding the extension ") + OBJ_nid2sn(nid));
  return success();
}

Result<Certificate> new_certificate(const Key& key, const std::string& common_name) {
  Certificate certificate(X509_new());
  if (!certificate || X509_set_version(certificate.get(), X509_VERSION_3) != 1 ||
      X509_set_pubkey(certificate.get(), key.get()) != 1 ||
      X509_NAME_add_entry_by_txt(X509_get_subject_name(certificate.get()), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0) != 1) {
    return openssl_error("making the certificate of " + common_name);
  }
  DESKD_RETURN_IF_ERROR(set_random_serial(certificate.get()));
  return certificate;
}

std::string general_name(const Host& host) { return (host.is_address ? "IP:" : "DNS:") + host.text; }

// The name constraint of one host: the exact address (every bit of it), or the DNS name,
// which by RFC 5280 also permits the names below it.
std::string permitted(const Host& host) {
  if (!host.is_address) return "permitted;DNS:" + host.text;
  const bool version6 = host.text.find(':') != std::string::npos;
  return "permitted;IP:" + host.text + "/" + (version6 ? "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" : "255.255.255.255");
}

}  // namespace

std::string normalized_host(std::string_view host) {
  std::string text(host);
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string address = address_text(text);
  return address.empty() ? text : address;
}

std::string safe_name(std::string_view text) {
  std::string safe;
  for (const char character : text.substr(0, 40)) {
    const bool kept = std::isalnum(static_cast<unsigned char>(character)) != 0 || character == ' ' ||
                      character == '.' || character == '_' || character == '-';
    safe.push_back(kept ? character : '_');
  }
  return safe;
}

Result<Host> parse_host(std::string_view text) {
  const std::string host = normalized_host(text);
  if (!address_text(host).empty()) return Host{host, true};
  if (is_dns_name(host)) return Host{host, false};
  return Error::make(ErrorCode::invalid_argument, "'" + safe_name(text) +
                                                      "' is neither an IP address nor a host name (letters, digits, "
                                                      "'-' and '_' in labels between dots); no certificate names it.");
}

Result<Key> new_key() {
  Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return openssl_error("making an EC P-256 key");
  return key;
}

Result<Certificate> make_authority(std::string_view desk_name, const Key& key, const std::vector<Host>& hosts) {
  DESKD_ASSIGN_OR_RETURN(auto certificate, new_certificate(key, "deskd desk " + safe_name(desk_name) + " CA"));
  X509* ca = certificate.get();
  if (X509_set_issuer_name(ca, X509_get_subject_name(ca)) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(ca), -kHourSeconds) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(ca), kValiditySeconds) == nullptr) {
    return openssl_error("setting the desk's CA's name and validity");
  }
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, ca, ca, nullptr, nullptr, 0);
  std::string constraints = "critical";
  for (const auto& host : hosts) constraints += "," + permitted(host);
  DESKD_RETURN_IF_ERROR(add_extension(ca, context, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  DESKD_RETURN_IF_ERROR(add_extension(ca, context, NID_key_usage, "critical,keyCertSign,cRLSign"));
  DESKD_RETURN_IF_ERROR(add_extension(ca, context, NID_subject_key_identifier, "hash"));
  DESKD_RETURN_IF_ERROR(add_extension(ca, context, NID_name_constraints, constraints));
  if (X509_sign(ca, key.get(), EVP_sha256()) <= 0) return openssl_error("signing the desk's CA certificate");
  return certificate;
}

Result<Leaf> mint_leaf(const Host& host, const Key& authority_key, const Certificate& authority) {
  Leaf leaf;
  DESKD_ASSIGN_OR_RETURN(leaf.key, new_key());
  // An address's common name is not the bare address: OpenSSL checks the common name of a
  // leaf without a DNS name against the CA's DNS constraints, and "127.0.0.1" would break
  // them wherever the CA vouches for names too. Clients check the address in the SAN.
  DESKD_ASSIGN_OR_RETURN(leaf.certificate,
                         new_certificate(leaf.key, host.is_address ? "deskd address " + host.text : host.text));
  X509* certificate = leaf.certificate.get();
  // The authority's own validity: the leaf can outlive neither it nor the desk's CA.
  if (X509_set_issuer_name(certificate, X509_get_subject_name(authority.get())) != 1 ||
      X509_set1_notBefore(certificate, X509_get0_notBefore(authority.get())) != 1 ||
      X509_set1_notAfter(certificate, X509_get0_notAfter(authority.get())) != 1) {
    return openssl_error("setting the issuer and validity of the certificate for " + host.text);
  }
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, authority.get(), certificate, nullptr, nullptr, 0);
  DESKD_RETURN_IF_ERROR(add_extension(certificate, context, NID_basic_constraints, "critical,CA:FALSE"));
  DESKD_RETURN_IF_ERROR(add_extension(certificate, context, NID_key_usage, "critical,digitalSignature"));
  DESKD_RETURN_IF_ERROR(add_extension(certificate, context, NID_ext_key_usage, "serverAuth"));
  DESKD_RETURN_IF_ERROR(add_extension(certificate, context, NID_subject_key_identifier, "hash"));
  DESKD_RETURN_IF_ERROR(add_extension(certificate, context, NID_authority_key_identifier, "keyid:always"));
  DESKD_RETURN_IF_ERROR(add_extension(certificate, context, NID_subject_alt_name, general_name(host)));
  if (X509_sign(certificate, authority_key.get(), EVP_sha256()) <= 0) {
    return openssl_error("signing the certificate for " + host.text);
  }
  return leaf;
}

Result<std::string> pem_of(const Certificate& certificate) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), certificate.get()) != 1)
    return openssl_error("writing a certificate as PEM");
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(length));
}

Error openssl_error(const std::string& doing) {
  std::string reason;
  if (const unsigned long code = ERR_peek_error(); code != 0) {
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    reason = text;
  }
  ERR_clear_error();
  return Error::make(ErrorCode::internal,
                     "OpenSSL failed " + doing + (reason.empty() ? std::string(".") : ": " + reason + "."));
}

}  // namespace deskd::egress::desk_certificates
