// The certificate authority of one cc-egress session, for the hosts whose
// TLS it terminates (--intercept): made at start with OpenSSL, its private
// key only ever in this process's memory, its certificate the one thing that
// leaves (the ready line, --ca-cert-out, the sandbox's trust bundle).
//
// The CA is name-constrained (RFC 5280 4.2.1.10, critical) to exactly the
// intercepted hosts: a client that trusts it accepts no certificate it
// signs for any other name, so the sandbox's trust in it reaches no further
// than the interception does. Leaf certificates are minted per host on first
// use (subjectAltName the host, serverAuth, valid for the session's days) and
// kept for the session; one leaf key serves them all.
//
//   auto ca = cc::net::SessionCa::create({"api.github.com"}).value();
//   std::string pem = ca->cert_pem();               // for clients to trust
//   SSL_CTX* ctx = ...;  ca->use_leaf(ctx, "api.github.com");
#pragma once

#include <openssl/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::net {

class SessionCa {
public:
    // `hosts`: DNS names (lower case, no trailing dot) or IP literals.
    static Result<std::unique_ptr<SessionCa>> create(const std::vector<std::string>& hosts, int days = 30);
    ~SessionCa();
    SessionCa(const SessionCa&) = delete;
    SessionCa& operator=(const SessionCa&) = delete;

    std::string cert_pem() const;
    // The leaf for `host` (minted once, then cached) as PEM: for tests.
    Result<std::string> leaf_pem(const std::string& host);
    // Puts the leaf for `host` and its key on a server context. Only names
    // the CA was made for: another is an input error, never minted.
    Status use_leaf(SSL_CTX* ctx, const std::string& host);

private:
    SessionCa() = default;
    Result<X509*> leaf(const std::string& host);

    EVP_PKEY* ca_key_ = nullptr;
    X509* ca_cert_ = nullptr;
    EVP_PKEY* leaf_key_ = nullptr;
    std::vector<std::string> hosts_;
    int days_ = 30;
    std::mutex mu_;
    std::map<std::string, X509*> leaves_;
};

}  // namespace cc::net
