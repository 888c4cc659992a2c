// The session's certificate authority (session_ca.hpp), with OpenSSL's
// X509 and EVP calls: P-256 keys, SHA-256 signatures, v3 extensions.

#include "cc/net/session_ca.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include "cc/net/host.hpp"

namespace cc::net {

namespace {

Error ssl_error(const std::string& what) {
    return Error{Errc::internal, what + " failed (OpenSSL)", "session CA", 0};
}

bool add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (!ext) return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

// 16 random bytes, positive: the serial number of every certificate.
bool random_serial(X509* cert) {
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof raw) != 1) return false;
    raw[0] &= 0x7f;
    BIGNUM* bn = BN_bin2bn(raw, sizeof raw, nullptr);
    if (!bn) return false;
    bool ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
    BN_free(bn);
    return ok;
}

// An hour back (clocks differ a little), `days` ahead.
bool validity(X509* cert, int days) {
    return X509_gmtime_adj(X509_getm_notBefore(cert), -3600) && X509_gmtime_adj(X509_getm_notAfter(cert), 86400L * days);
}

bool set_cn(X509_NAME* name, const std::string& cn) {
    return X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()),
                                      -1, -1, 0) == 1;
}

// "DNS:name" or "IP:literal", as the extension syntax spells it.
std::string general_name(const std::string& host) {
    auto a = parse_ip_literal(host);
    if (!a) return "DNS:" + host;
    return "IP:" + a->to_string();
}

std::string pem_of(X509* cert) {
    BIO* b = BIO_new(BIO_s_mem());
    if (!b) return {};
    std::string out;
    if (PEM_write_bio_X509(b, cert) == 1) {
        char* data = nullptr;
        long n = BIO_get_mem_data(b, &data);
        if (n > 0) out.assign(data, static_cast<std::size_t>(n));
    }
    BIO_free(b);
    return out;
}

}  // namespace

Result<std::unique_ptr<SessionCa>> SessionCa::create(const std::vector<std::string>& hosts, int days) {
    if (hosts.empty()) return input_error("session CA", "no host to intercept");
    std::unique_ptr<SessionCa> ca(new SessionCa());
    ca->hosts_ = hosts;
    ca->days_ = days;
    ca->ca_key_ = EVP_EC_gen("P-256");
    ca->leaf_key_ = EVP_EC_gen("P-256");
    if (!ca->ca_key_ || !ca->leaf_key_) return ssl_error("key generation");
    X509* c = X509_new();
    if (!c) return ssl_error("X509_new");
    ca->ca_cert_ = c;
    // Name constraints: every intercepted host is a permitted subtree, and
    // nothing else is (an IP literal as a /32 or /128).
    std::string permitted = "critical";
    for (const auto& h : hosts) {
        auto a = parse_ip_literal(h);
        if (!a) permitted += ",permitted;DNS:" + h;
        else if (a->v4()) permitted += ",permitted;IP:" + a->to_string() + "/255.255.255.255";
        else permitted += ",permitted;IP:" + a->to_string() + "/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
    }
    X509_NAME* name = X509_get_subject_name(c);
    if (X509_set_version(c, 2) != 1 || !random_serial(c) || !validity(c, days) ||
        !set_cn(name, "cc-egress session CA") ||
        X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>("cc"), -1, -1,
                                   0) != 1 ||
        X509_set_issuer_name(c, name) != 1 || X509_set_pubkey(c, ca->ca_key_) != 1 ||
        !add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_ext(c, c, NID_subject_key_identifier, "hash") ||
        !add_ext(c, c, NID_name_constraints, permitted) || X509_sign(c, ca->ca_key_, EVP_sha256()) <= 0)
        return ssl_error("making the CA certificate");
    return ca;
}

SessionCa::~SessionCa() {
    for (auto& [h, x] : leaves_) X509_free(x);
    X509_free(ca_cert_);
    EVP_PKEY_free(ca_key_);
    EVP_PKEY_free(leaf_key_);
}

std::string SessionCa::cert_pem() const { return pem_of(ca_cert_); }

Result<X509*> SessionCa::leaf(const std::string& host) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = leaves_.find(host); it != leaves_.end()) return it->second;
    if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end())
        return input_error(host, "is not a host this session intercepts");
    X509* c = X509_new();
    if (!c) return ssl_error("X509_new");
    X509_NAME* name = X509_get_subject_name(c);
    if (X509_set_version(c, 2) != 1 || !random_serial(c) || !validity(c, days_) || !set_cn(name, host) ||
        X509_set_issuer_name(c, X509_get_subject_name(ca_cert_)) != 1 || X509_set_pubkey(c, leaf_key_) != 1 ||
        !add_ext(c, ca_cert_, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(c, ca_cert_, NID_key_usage, "critical,digitalSignature") ||
        !add_ext(c, ca_cert_, NID_ext_key_usage, "serverAuth") ||
        !add_ext(c, ca_cert_, NID_subject_alt_name, general_name(host)) ||
        !add_ext(c, ca_cert_, NID_authority_key_identifier, "keyid:always") ||
        X509_sign(c, ca_key_, EVP_sha256()) <= 0) {
        X509_free(c);
        return ssl_error("minting a certificate for " + host);
    }
    leaves_[host] = c;
    return c;
}

Result<std::string> SessionCa::leaf_pem(const std::string& host) {
    auto l = leaf(host);
    if (!l) return l.error();
    return pem_of(*l);
}

Status SessionCa::use_leaf(SSL_CTX* ctx, const std::string& host) {
    auto l = leaf(host);
    if (!l) return l.error();
    if (SSL_CTX_use_certificate(ctx, *l) != 1 || SSL_CTX_use_PrivateKey(ctx, leaf_key_) != 1 ||
        SSL_CTX_add1_chain_cert(ctx, ca_cert_) != 1)
        return ssl_error("installing the certificate for " + host);
    return ok();
}

}  // namespace cc::net
