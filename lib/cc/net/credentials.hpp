// Credentials the agent never holds: cc-egress reads the real value at
// start, the sandbox sees only a placeholder (a random string made for the
// session), and the placeholder is replaced by the real value in the
// request heads cc-egress reads on an intercepted host (session_ca.hpp)
// that the credential names. Anywhere else the placeholder is refused: on a
// host the credential does not name, in plain HTTP, in a request target.
//
//   auto c = cc::net::parse_credential("GH_TOKEN@api.github.com,github.com=file:/run/secrets/gh").value();
//   auto r = cc::net::inject_credentials({c}, "api.github.com", head.headers, head.target, true);
//   if (r.refused) ... 403, r.reason;  r.injected names what was replaced
#pragma once

#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/http/http1.hpp"

namespace cc::net {

struct Credential {
    std::string name;                // the variable the tool reads in the sandbox (GH_TOKEN)
    std::vector<std::string> hosts;  // where the real value may go (exact names)
    std::string placeholder;         // what the sandbox holds instead
    std::string value;               // the real value: never printed, logged or reported
};

// "NAME@HOST[,HOST...]=SOURCE", SOURCE "file:PATH" (a regular file only its
// owner can read; its first line) or "fd:N" (an inherited descriptor, read to
// its end and closed; its first line). NAME is a variable name; each HOST an
// exact host name; the value 1 to 8192 printable ASCII bytes.
Result<Credential> parse_credential(const std::string& spec);

// "cc-placeholder-" and 32 random hex digits.
std::string make_placeholder();

struct Injection {
    bool refused = false;
    std::string reason;                 // names the credential, never its value
    std::vector<std::string> injected;  // names of the credentials replaced
};

// A placeholder in the Authorization header (as it is, or inside the
// user:password of a Basic value) is replaced by the real value when `host`
// is one of that credential's hosts and `may_inject` (TLS terminated here);
// otherwise the request is refused. A placeholder in any other header, or
// in the request target, is refused everywhere: a server may echo or store
// those, and the real value would come back.
Injection inject_credentials(const std::vector<Credential>& creds, const std::string& host,
                             cc::http::Headers& headers, const std::string& target, bool may_inject);

}  // namespace cc::net
