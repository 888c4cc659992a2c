#include "cc/git/upstream.hpp"

#include <sys/random.h>

#include <cerrno>

#include <sys/socket.h>

#include "cc/git/pkt_line.hpp"
#include "cc/git/receive_pack.hpp"

namespace cc::git {

namespace {
constexpr long io_chunk = 64 * 1024;

// Upstream connections close on exec, like every other descriptor of the
// gateway: a token command started meanwhile inherits none of them.
curl_socket_t open_cloexec(void*, curlsocktype, curl_sockaddr* a) {
    return ::socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}
}  // namespace

void common_curl(CurlHandle& c, const std::string& url, const std::string& token, const std::string& agent,
                 std::chrono::seconds io_timeout) {
    curl_easy_setopt(c.h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c.h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c.h, CURLOPT_OPENSOCKETFUNCTION, open_cloexec);
    curl_easy_setopt(c.h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c.h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c.h, CURLOPT_CONNECTTIMEOUT, 10L);
    // A big pack may keep upstream silent while it indexes; only a stall this long is an error.
    curl_easy_setopt(c.h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c.h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(io_timeout.count()));
    curl_easy_setopt(c.h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c.h, CURLOPT_BUFFERSIZE, io_chunk);
    // Basic with the token as password, sent up front (git itself waits for a
    // 401). "x-access-token" is GitHub's username for installation tokens.
    curl_easy_setopt(c.h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c.h, CURLOPT_USERNAME, "x-access-token");
    curl_easy_setopt(c.h, CURLOPT_PASSWORD, token.c_str());
    curl_easy_setopt(c.h, CURLOPT_USERAGENT, agent.c_str());
}

std::string curl_error_text(CURLcode rc, const char* errbuf) {
    std::string s = errbuf && *errbuf ? errbuf : curl_easy_strerror(rc);
    return one_line(s, 200);
}

size_t collect_capped(char* p, size_t size, size_t n, void* ud) {
    auto* s = static_cast<std::string*>(ud);
    if (s->size() + size * n > (32u << 20)) return 0;
    s->append(p, size * n);
    return size * n;
}

Result<std::map<std::string, RemoteRef>> parse_ls_refs(std::string_view body) {
    PktReader r;
    r.feed(body);
    std::map<std::string, RemoteRef> out;
    for (;;) {
        auto p = r.next();
        if (!p) return p.error();
        if (!*p) return input_error("ls-refs answer", "ends before its flush");
        const Pkt& k = **p;
        if (k.kind == Pkt::Kind::flush) break;
        if (k.kind != Pkt::Kind::data) return input_error("ls-refs answer", "unexpected special packet");
        std::string line = k.payload;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        if (line.rfind("ERR ", 0) == 0)
            return input_error("ls-refs answer", "upstream error: " + one_line(line.substr(4), 200));
        // "<oid> <name>" then attributes, each after one blank.
        auto sp = line.find(' ');
        if (sp == std::string::npos || (sp != 40 && sp != 64 && line.rfind("unborn ", 0) != 0))
            return input_error("ls-refs answer", "malformed line '" + one_line(line, 120) + "'");
        RemoteRef ref;
        ref.oid = line.substr(0, sp);
        if (ref.oid == "unborn") ref.oid = std::string(40, '0');
        std::string rest = line.substr(sp + 1);
        auto sp2 = rest.find(' ');
        std::string name = rest.substr(0, sp2);
        while (sp2 != std::string::npos) {
            auto next = rest.find(' ', sp2 + 1);
            std::string attr = rest.substr(sp2 + 1, next == std::string::npos ? std::string::npos : next - sp2 - 1);
            if (attr.rfind("symref-target:", 0) == 0) ref.symref_target = attr.substr(14);
            sp2 = next;
        }
        if (name.empty()) return input_error("ls-refs answer", "line without a ref name");
        out[name] = std::move(ref);
    }
    return out;
}

namespace {

// POSTs one smart-HTTP request to git-SERVICE ("upload-pack" or
// "receive-pack") and returns the whole answer (capped); `what` names the
// step in errors, `v2` asks for protocol version 2.
Result<std::string> post_service(const std::string& repo_url, const std::string& service, const std::string& token,
                                 const std::string& agent, const std::string& req, bool v2, const std::string& what,
                                 std::chrono::seconds io_timeout) {
    CurlHandle ch;
    char errbuf[CURL_ERROR_SIZE] = {0};
    std::string body;
    common_curl(ch, repo_url + "/git-" + service, token, agent, io_timeout);
    if (v2) ch.header("Git-Protocol: version=2");
    ch.header("Content-Type: application/x-git-" + service + "-request");
    ch.header("Accept: application/x-git-" + service + "-result");
    ch.header("Expect:");
    curl_easy_setopt(ch.h, CURLOPT_HTTPHEADER, ch.headers);
    curl_easy_setopt(ch.h, CURLOPT_POST, 1L);
    curl_easy_setopt(ch.h, CURLOPT_POSTFIELDS, req.data());
    curl_easy_setopt(ch.h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.size()));
    curl_easy_setopt(ch.h, CURLOPT_WRITEFUNCTION, collect_capped);
    curl_easy_setopt(ch.h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(ch.h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(ch.h, CURLOPT_TIMEOUT, static_cast<long>(io_timeout.count()));
    CURLcode rc = curl_easy_perform(ch.h);
    long status = 0;
    curl_easy_getinfo(ch.h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && status == 0) return io_error("upstream unreachable", curl_error_text(rc, errbuf), 0);
    if (rc != CURLE_OK) return io_error(what, curl_error_text(rc, errbuf), 0);
    if (status != 200) return io_error(what, "answered HTTP " + std::to_string(status), 0);
    return body;
}

}  // namespace

Result<std::map<std::string, RemoteRef>> ls_refs(const std::string& repo_url, const std::string& token,
                                                 const std::string& agent, const std::vector<std::string>& prefixes,
                                                 std::chrono::seconds io_timeout) {
    std::string req = pkt("command=ls-refs\n") + "0001" + pkt("symrefs\n") + pkt("unborn\n");
    for (const auto& p : prefixes) req += pkt("ref-prefix " + p + "\n");
    req += flush_pkt;
    auto body = post_service(repo_url, "upload-pack", token, agent, req, true, "upstream ls-refs", io_timeout);
    if (!body) return body.error();
    return parse_ls_refs(*body);
}

Result<std::vector<std::string>> unlisted_refs(const std::string& repo_url, const std::string& token,
                                               const std::string& agent, const std::vector<std::string>& names,
                                               const std::string& oid, std::chrono::seconds io_timeout) {
    std::vector<std::string> found;
    for (const auto& n : names) {
        auto one = unlisted_ref(repo_url, token, agent, n, oid, io_timeout);
        if (!one) return one.error();
        if (*one) found.push_back(n);
    }
    return found;
}

namespace {

// POSTs a receive-pack request; its report (band 1) and messages (bands 2, 3).
Result<std::pair<std::string, std::string>> post_receive_pack(const std::string& repo_url, const std::string& token,
                                                              const std::string& agent, const std::string& req,
                                                              std::chrono::seconds io_timeout) {
    auto body = post_service(repo_url, "receive-pack", token, agent, req, false, "upstream ref probe", io_timeout);
    if (!body) return body.error();
    PktReader r;
    r.feed(*body);
    std::string report, messages;
    for (;;) {
        auto k = r.next();
        if (!k) return io_error("upstream ref probe", k.error().one_line(), 0);
        if (!*k) break;
        const std::string& p = (*k)->payload;
        if (p.empty()) continue;
        if (p[0] == 1)
            report += p.substr(1);
        else if (p[0] == 2 || p[0] == 3)
            messages += p.substr(1);
    }
    if (report.find("unpack ok") == std::string::npos)
        return io_error("upstream ref probe", "no report from receive-pack", 0);
    return std::make_pair(report, messages);
}

}  // namespace

Result<bool> unlisted_ref(const std::string& repo_url, const std::string& token, const std::string& agent,
                          const std::string& name, const std::string& oid, std::chrono::seconds io_timeout) {
    unsigned char rnd[8];
    if (::getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd))
        return io_error("getrandom", "failed", errno);
    std::string tag = "cc-pushgate-probe-";
    for (unsigned char c : rnd) tag += "0123456789abcdef"[c >> 4], tag += "0123456789abcdef"[c & 15];
    // One atomic transaction: the create of <name>/<tag> is locked first (and
    // fails there when <name> is a ref), then an update of a ref that does
    // not exist fails the whole transaction, so nothing is ever written.
    std::string zero(oid.size(), '0');
    std::string probe = name + "/" + tag;
    std::string req = pkt(zero + " " + oid + " " + probe + std::string(1, '\0') +
                          "report-status side-band-64k quiet atomic agent=" + agent + "\n");
    req += pkt(oid + " " + oid + " refs/" + tag + "/missing\n");
    req += flush_pkt;
    // An empty pack: every new value is an object the upstream has.
    req += std::string("PACK\0\0\0\2\0\0\0\0", 12);
    req += std::string("\x02\x9d\x08\x82\x3b\xd8\xa8\xea\xb5\x10\xad\x6a\xc7\x5c\x82\x3c\xfd\x3e\xd3\x1e", 20);
    auto got = post_receive_pack(repo_url, token, agent, req, io_timeout);
    if (!got) return got.error();
    const auto& [report, messages] = *got;
    if (report.find("ok " + probe + "\n") != std::string::npos) {
        // An upstream that does not do atomic pushes applied the create: so
        // <name> is no ref. The probe's ref is deleted again at once.
        std::string del = pkt(oid + " " + zero + " " + probe + std::string(1, '\0') +
                              "report-status side-band-64k quiet agent=" + agent + "\n") +
                          std::string(flush_pkt);
        auto gone = post_receive_pack(repo_url, token, agent, del, io_timeout);
        if (!gone || gone->first.find("ok " + probe + "\n") == std::string::npos)
            return io_error("upstream ref probe", "the upstream kept the probe's ref " + probe + " (no atomic pushes)", 0);
        return false;
    }
    return messages.find("'" + name + "' exists; cannot create '" + probe + "'") != std::string::npos;
}

}  // namespace cc::git
