// The desk's certificate authority, with real OpenSSL: what it signs verifies strictly for
// its hosts and for nothing else (name constraints), a real TLS handshake with a client that
// trusts only the CA, and the trust bundle file the sandbox shows.

#include "runner/egress/desk_authority.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/egress/desk_certificates.h"

namespace deskd::egress {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using asio::ip::tcp;
using ::testing::HasSubstr;

struct StoreFree {
  void operator()(X509_STORE* store) const { X509_STORE_free(store); }
};
struct StoreContextFree {
  void operator()(X509_STORE_CTX* context) const { X509_STORE_CTX_free(context); }
};

desk_certificates::Certificate certificate_of(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  desk_certificates::Certificate certificate(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return certificate;
}

// The leaf a server context presents.
X509* leaf_of(const asio::ssl::context& context) {
  return SSL_CTX_get0_certificate(const_cast<asio::ssl::context&>(context).native_handle());
}

// X509_verify_cert of `leaf` for `host` (a name, or an address), strictly, against a store
// holding `authority` only (or the certificates of `bundle_file`); the verification error.
int verify(X509* leaf, X509* authority, const std::string& host, const std::string& bundle_file = "") {
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  if (bundle_file.empty()) {
    X509_STORE_add_cert(store.get(), authority);
  } else if (X509_STORE_load_file(store.get(), bundle_file.c_str()) != 1) {
    return -1;
  }
  std::unique_ptr<X509_STORE_CTX, StoreContextFree> context(X509_STORE_CTX_new());
  X509_STORE_CTX_init(context.get(), store.get(), leaf, nullptr);
  X509_VERIFY_PARAM* parameters = X509_STORE_CTX_get0_param(context.get());
  X509_VERIFY_PARAM_set_flags(parameters, X509_V_FLAG_X509_STRICT);
  X509_VERIFY_PARAM_set_purpose(parameters, X509_PURPOSE_SSL_SERVER);
  if (desk_certificates::parse_host(host)->is_address) {
    X509_VERIFY_PARAM_set1_ip_asc(parameters, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(parameters, host.c_str(), host.size());
  }
  if (X509_verify_cert(context.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(context.get());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DeskAuthorityTest, RefusesNoHostsAndWhatIsNoHost) {
  auto none = DeskAuthority::create("nifty", {});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().what, HasSubstr("no host"));
  for (const char* bad : {"*.example.com", "a b", "example.com,DNS:evil.org", "", "x..y", "host/path"}) {
    auto made = DeskAuthority::create("nifty", {"api.example.com", bad});
    EXPECT_FALSE(made.ok()) << bad;
  }
}

TEST(DeskAuthorityTest, TheCaIsAConstrainedCaOfItsDesk) {
  auto authority = DeskAuthority::create("nifty \"desk\"/1", {"api.example.com", "127.0.0.1"});
  ASSERT_TRUE(authority.ok()) << authority.error().what;
  const auto ca = certificate_of((*authority)->certificate_pem());
  ASSERT_TRUE(ca);
  char name[256];
  X509_NAME_get_text_by_NID(X509_get_subject_name(ca.get()), NID_commonName, name, sizeof name);
  EXPECT_STREQ(name, "deskd desk nifty _desk__1 CA");
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_EQ(X509_get_pathlen(ca.get()), 0);
  EXPECT_EQ(X509_get_key_usage(ca.get()), static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  for (const int nid : {NID_basic_constraints, NID_key_usage, NID_name_constraints}) {
    const int index = X509_get_ext_by_NID(ca.get(), nid, -1);
    ASSERT_GE(index, 0) << OBJ_nid2sn(nid);
    EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(ca.get(), index)), 1) << OBJ_nid2sn(nid);
  }
  EXPECT_NE(X509_get0_subject_key_id(ca.get()), nullptr);
  // From an hour ago, for 397 days.
  const std::time_t now = std::time(nullptr);
  std::time_t hour_ago = now - 3500;
  std::time_t later = now + 396L * 86400;
  EXPECT_LT(X509_cmp_time(X509_get0_notBefore(ca.get()), &hour_ago), 0);
  EXPECT_GT(X509_cmp_time(X509_get0_notAfter(ca.get()), &later), 0);
  later = now + 398L * 86400;
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(ca.get()), &later), 0);
  // Two CAs never share a serial.
  const auto other = DeskAuthority::create("nifty", {"api.example.com"});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca.get()),
                             X509_get0_serialNumber(certificate_of((*other)->certificate_pem()).get())),
            0);
}

TEST(DeskAuthorityTest, ItsLeavesVerifyStrictlyForTheirHostsAndAreMintedOnce) {
  auto authority = DeskAuthority::create("nifty", {"API.Example.com", "127.0.0.1", "data.example.org"});
  ASSERT_TRUE(authority.ok()) << authority.error().what;
  const auto ca = certificate_of((*authority)->certificate_pem());
  for (const std::string host : {"api.example.com", "127.0.0.1", "data.example.org"}) {
    auto context = (*authority)->server_context(host);
    ASSERT_TRUE(context.ok()) << context.error().what;
    X509* leaf = leaf_of(**context);
    ASSERT_NE(leaf, nullptr);
    EXPECT_EQ(verify(leaf, ca.get(), host), X509_V_OK)
        << host << ": " << X509_verify_cert_error_string(verify(leaf, ca.get(), host));
    EXPECT_EQ(X509_check_ca(leaf), 0);
    EXPECT_NE(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER, 0u);
    EXPECT_EQ(X509_get_key_usage(leaf), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
    EXPECT_NE(X509_get0_authority_key_id(leaf), nullptr);
    EXPECT_LE(ASN1_TIME_compare(X509_get0_notAfter(leaf), X509_get0_notAfter(ca.get())), 0);
    EXPECT_GE(ASN1_TIME_compare(X509_get0_notBefore(leaf), X509_get0_notBefore(ca.get())), 0);
    // The host check is real: the same leaf is not good for another name.
    EXPECT_NE(verify(leaf, ca.get(), host == "127.0.0.1" ? "127.0.0.2" : "www.example.net"), X509_V_OK);
    auto again = (*authority)->server_context(host);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->get(), context->get());
  }
  auto upper = (*authority)->server_context("API.EXAMPLE.COM");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(upper->get(), (*authority)->server_context("api.example.com")->get());
}

TEST(DeskAuthorityTest, ItMintsForNoOtherHostAndItsConstraintsRefuseAForgedLeaf) {
  auto authority = DeskAuthority::create("nifty", {"api.example.com"});
  ASSERT_TRUE(authority.ok());
  auto refused = (*authority)->server_context("other.host");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::refused);
  EXPECT_THAT(refused.error().what, HasSubstr("other.host"));

  // Were its key to leak, what it signed for another name would still not verify.
  namespace certificates = desk_certificates;
  const auto key = certificates::new_key();
  ASSERT_TRUE(key.ok());
  const std::vector<certificates::Host> hosts = {*certificates::parse_host("api.example.com"),
                                                 *certificates::parse_host("10.1.2.3")};
  const auto ca = certificates::make_authority("nifty", *key, hosts);
  ASSERT_TRUE(ca.ok());
  const auto good = certificates::mint_leaf(hosts[0], *key, *ca);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(verify(good->certificate.get(), ca->get(), "api.example.com"), X509_V_OK);
  for (const char* other : {"evil.example.org", "example.com", "10.1.2.4"}) {
    const auto forged = certificates::mint_leaf(*certificates::parse_host(other), *key, *ca);
    ASSERT_TRUE(forged.ok());
    EXPECT_EQ(verify(forged->certificate.get(), ca->get(), other), X509_V_ERR_PERMITTED_VIOLATION) << other;
  }
}

// A client that trusts the desk's CA alone and checks the host name, against the server
// context, over loopback TCP: the handshake succeeds for the gated host, ALPN settles on
// HTTP/1.1 (never h2), and a client expecting another name refuses the certificate.
class HandshakeTest : public ::testing::Test {
 protected:
  struct Outcome {
    boost::system::error_code client;
    boost::system::error_code server;
    std::string protocol;
  };

  Outcome handshake(const std::string& ca_pem, std::shared_ptr<asio::ssl::context> server_context,
                    const std::string& expected_host, std::vector<unsigned char> alpn) {
    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    asio::ssl::context client_context(asio::ssl::context::tls_client);
    client_context.add_certificate_authority(asio::buffer(ca_pem));
    client_context.set_verify_mode(asio::ssl::verify_peer);
    client_context.set_verify_callback(asio::ssl::host_name_verification(expected_host));
    asio::ssl::stream<tcp::socket> client(io, client_context);
    asio::ssl::stream<tcp::socket> server(io, *server_context);
    SSL_set_tlsext_host_name(client.native_handle(), expected_host.c_str());
    if (!alpn.empty()) SSL_set_alpn_protos(client.native_handle(), alpn.data(), static_cast<unsigned>(alpn.size()));
    Outcome outcome;
    acceptor.async_accept(server.next_layer(), [&](boost::system::error_code error) {
      if (error) {
        outcome.server = error;
        return;
      }
      server.async_handshake(asio::ssl::stream_base::server,
                             [&](boost::system::error_code handshake_error) { outcome.server = handshake_error; });
    });
    client.next_layer().async_connect(acceptor.local_endpoint(), [&](boost::system::error_code error) {
      if (error) {
        outcome.client = error;
        return;
      }
      client.async_handshake(asio::ssl::stream_base::client, [&](boost::system::error_code handshake_error) {
        outcome.client = handshake_error;
        const unsigned char* selected = nullptr;
        unsigned length = 0;
        SSL_get0_alpn_selected(client.native_handle(), &selected, &length);
        if (selected != nullptr) outcome.protocol.assign(reinterpret_cast<const char*>(selected), length);
        if (handshake_error) client.next_layer().close();
      });
    });
    io.run_for(std::chrono::seconds(10));
    return outcome;
  }
};

std::vector<unsigned char> alpn_list(std::initializer_list<std::string> protocols) {
  std::vector<unsigned char> wire;
  for (const auto& protocol : protocols) {
    wire.push_back(static_cast<unsigned char>(protocol.size()));
    wire.insert(wire.end(), protocol.begin(), protocol.end());
  }
  return wire;
}

TEST_F(HandshakeTest, AClientTrustingOnlyTheCaCompletesAnHttp1Handshake) {
  auto authority = DeskAuthority::create("nifty", {"api.example.com", "127.0.0.1"});
  ASSERT_TRUE(authority.ok());
  auto context = (*authority)->server_context("api.example.com");
  ASSERT_TRUE(context.ok());
  const auto offered =
      handshake((*authority)->certificate_pem(), *context, "api.example.com", alpn_list({"h2", "http/1.1"}));
  EXPECT_FALSE(offered.client) << offered.client.message();
  EXPECT_FALSE(offered.server) << offered.server.message();
  EXPECT_EQ(offered.protocol, "http/1.1");

  // A client that offers only h2 gets no protocol, never h2; one offering none is served.
  const auto h2 = handshake((*authority)->certificate_pem(), *context, "api.example.com", alpn_list({"h2"}));
  EXPECT_FALSE(h2.client) << h2.client.message();
  EXPECT_EQ(h2.protocol, "");
  const auto none = handshake((*authority)->certificate_pem(), *context, "api.example.com", {});
  EXPECT_FALSE(none.client) << none.client.message();
}

TEST_F(HandshakeTest, AClientExpectingAnotherNameOrTrustingAnotherCaRefuses) {
  auto authority = DeskAuthority::create("nifty", {"api.example.com"});
  auto stranger = DeskAuthority::create("other", {"api.example.com"});
  ASSERT_TRUE(authority.ok() && stranger.ok());
  auto context = (*authority)->server_context("api.example.com");
  ASSERT_TRUE(context.ok());
  const auto wrong_name = handshake((*authority)->certificate_pem(), *context, "www.example.com", {});
  EXPECT_TRUE(wrong_name.client);
  const auto wrong_ca = handshake((*stranger)->certificate_pem(), *context, "api.example.com", {});
  EXPECT_TRUE(wrong_ca.client);
}

class TrustBundleFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/deskd-bundle-XXXXXX";
    folder_ = ::mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(folder_); }
  fs::path folder_;
};

TEST_F(TrustBundleFileTest, HoldsTheSystemBundleThenTheCaAtMode0644AndVerifiesItsLeaves) {
  auto authority = DeskAuthority::create("nifty", {"api.example.com"});
  ASSERT_TRUE(authority.ok());
  const std::string system = read_file(kSystemTrustBundle);
  const fs::path bundle = folder_ / "trust-bundle.pem";
  std::ofstream(bundle) << "an older bundle";
  const mode_t previous = ::umask(077);
  const auto written = write_trust_bundle(bundle, (*authority)->certificate_pem());
  ::umask(previous);
  ASSERT_TRUE(written.ok()) << written.error().what;
  const std::string expected =
      system.empty() ? (*authority)->certificate_pem() : system + "\n" + (*authority)->certificate_pem();
  EXPECT_TRUE(read_file(bundle) == expected);
  struct stat status {};
  ASSERT_EQ(::stat(bundle.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 07777, 0644u);
  EXPECT_EQ(std::distance(fs::directory_iterator(folder_), fs::directory_iterator()), 1);  // no temporary left

  // What OpenSSL loads from it verifies the CA's leaves (and the system's roots stay).
  auto context = (*authority)->server_context("api.example.com");
  ASSERT_TRUE(context.ok());
  EXPECT_EQ(verify(leaf_of(**context), nullptr, "api.example.com", bundle.native()), X509_V_OK);
}

TEST_F(TrustBundleFileTest, AMissingSystemBundleLeavesTheCaAloneAndAHugeOneIsRefused) {
  const std::string pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  ASSERT_TRUE(write_trust_bundle(folder_ / "bundle.pem", pem, folder_ / "none.crt").ok());
  EXPECT_EQ(read_file(folder_ / "bundle.pem"), pem);

  const fs::path huge = folder_ / "huge.crt";
  std::ofstream(huge).close();
  fs::resize_file(huge, std::uintmax_t{9} << 20);
  const auto refused = write_trust_bundle(folder_ / "bundle.pem", pem, huge);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().what, HasSubstr("8 MiB"));
  EXPECT_EQ(read_file(folder_ / "bundle.pem"), pem);  // left as it was
}

}  // namespace
}  // namespace deskd::egress
