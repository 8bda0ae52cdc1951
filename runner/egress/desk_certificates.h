#pragma once
// The X.509 work of a desk's certificate authority (desk_authority.h), with OpenSSL 3: its
// EC P-256 keys, its self-signed CA certificate name-constrained to the desk's gated hosts,
// and the leaf certificates it signs for them. Apart from DeskAuthority so that the tests can
// mint what the authority itself never would (a leaf for a host outside its constraints).

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace deskd::egress::desk_certificates {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertificateFree {
  void operator()(X509* certificate) const { X509_free(certificate); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Certificate = std::unique_ptr<X509, CertificateFree>;

/// A host a certificate names: a DNS name (lower case) or an IP address (IPv4 or IPv6).
struct Host {
  std::string text;
  bool is_address = false;
};

/// A leaf certificate and its own key.
struct Leaf {
  Key key;
  Certificate certificate;
};

/// `host` in lower case, as hosts are compared.
std::string normalized_host(std::string_view host);
/// `text` with every character but letters, digits, space, '.', '_' and '-' replaced by
/// '_', at most 40 characters: fit for a certificate's name and for a message.
std::string safe_name(std::string_view text);
/// The host `text` names; refuses (a sentence) what is neither an IP address nor a DNS
/// name of letters, digits, '-' and '_' in dot-separated labels (no wildcard).
Result<Host> parse_host(std::string_view text);

/// A new EC P-256 key.
Result<Key> new_key();
/// The desk's self-signed CA certificate: CN "deskd desk NAME CA", a random 128-bit serial,
/// valid from an hour ago for 397 days, CA:TRUE pathlen:0, keyCertSign and cRLSign, and
/// name constraints permitting `hosts` only (critical, as the basic constraints and key use).
Result<Certificate> make_authority(std::string_view desk_name, const Key& key, const std::vector<Host>& hosts);
/// A server certificate for `host` with a key of its own, signed (SHA-256) by the authority
/// and valid within its validity: CN and SAN the host (an address: SAN IP, CN "deskd address
/// A"), serverAuth, digitalSignature, CA:FALSE. Mints for any host: the caller decides which.
Result<Leaf> mint_leaf(const Host& host, const Key& authority_key, const Certificate& authority);
/// The certificate in PEM.
Result<std::string> pem_of(const Certificate& certificate);

/// An error sentence: `doing` failed, with OpenSSL's reason (its error queue is emptied).
Error openssl_error(const std::string& doing);

}  // namespace deskd::egress::desk_certificates
