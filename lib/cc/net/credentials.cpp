// Credentials injected at the proxy (credentials.hpp).

#include "cc/net/credentials.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/beast/core/detail/base64.hpp>

#include "cc/core/io.hpp"
#include "cc/net/host.hpp"

namespace cc::net {

namespace {

namespace b64 = boost::beast::detail::base64;

bool variable_name(const std::string& s) {
    if (s.empty() || s.size() > 128 || (s[0] >= '0' && s[0] <= '9')) return false;
    for (char ch : s)
        if (!(ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
            return false;
    return true;
}

// The first line of `text`, checked: the value of a credential.
Result<std::string> first_line(const std::string& text, const std::string& what) {
    std::string v = text.substr(0, text.find('\n'));
    if (!v.empty() && v.back() == '\r') v.pop_back();
    if (v.empty() || v.size() > 8192) return input_error(what, "the value (first line) must be 1 to 8192 bytes");
    for (unsigned char ch : v)
        if (ch < 0x21 || ch > 0x7e) return input_error(what, "the value must be printable ASCII without spaces");
    return v;
}

Result<std::string> read_fd(int fd, const std::string& what) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return input_error(what, "is not an open descriptor");
    std::string text;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            ::close(fd);
            return io_error(what, "cannot read", e);
        }
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > 65536) break;
    }
    ::close(fd);
    return first_line(text, what);
}

bool iequal(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::size_t replace_all(std::string& s, const std::string& from, const std::string& to) {
    std::size_t n = 0;
    for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
        s.replace(p, from.size(), to);
        ++n;
    }
    return n;
}

// "Basic <base64>" decoded, or nullopt when the value is not that.
std::optional<std::string> basic_decoded(const std::string& value) {
    if (value.size() < 7 || !iequal(std::string_view(value).substr(0, 6), "basic ")) return std::nullopt;
    std::string_view enc(value);
    enc.remove_prefix(6);
    while (!enc.empty() && enc.front() == ' ') enc.remove_prefix(1);
    while (!enc.empty() && enc.back() == ' ') enc.remove_suffix(1);
    if (enc.empty() || enc.size() % 4 != 0 || enc.size() > 16384) return std::nullopt;
    std::string raw(b64::decoded_size(enc.size()), '\0');
    auto [written, read] = b64::decode(raw.data(), enc.data(), enc.size());
    std::size_t pad = enc.ends_with("==") ? 2 : enc.ends_with("=") ? 1 : 0;
    if (read != enc.size() - pad) return std::nullopt;
    raw.resize(written);
    return raw;
}

std::string basic_encoded(const std::string& raw) {
    std::string out(b64::encoded_size(raw.size()), '\0');
    out.resize(b64::encode(out.data(), raw.data(), raw.size()));
    return "Basic " + out;
}

}  // namespace

std::string make_placeholder() {
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        // No randomness: a fixed placeholder would be guessable; fail loudly.
        throw std::runtime_error("no random bytes for a credential placeholder");
    }
    static const char hex[] = "0123456789abcdef";
    std::string out = "cc-placeholder-";
    for (unsigned char b : raw) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

Result<Credential> parse_credential(const std::string& spec) {
    std::string what = "--credential '" + spec.substr(0, spec.find('=')) + "'";
    auto at = spec.find('@');
    auto eq = spec.find('=');
    if (at == std::string::npos || eq == std::string::npos || eq < at)
        return input_error(what, "expected NAME@HOST[,HOST...]=file:PATH or =fd:N");
    Credential c;
    c.name = spec.substr(0, at);
    if (!variable_name(c.name)) return input_error(what, "NAME must be an environment variable name");
    std::string hosts = spec.substr(at + 1, eq - at - 1);
    for (std::size_t p = 0; p <= hosts.size();) {
        auto q = hosts.find(',', p);
        if (q == std::string::npos) q = hosts.size();
        std::string h = hosts.substr(p, q - p);
        auto t = canonical_target(h);
        if (h.empty() || !t || h.find_first_of("*?[:/") != std::string::npos)
            return input_error(what, "'" + h + "' is not a host name (exact names only, no port or pattern)");
        c.hosts.push_back(t->host);
        p = q + 1;
    }
    std::string src = spec.substr(eq + 1);
    Result<std::string> v = input_error(what, "SOURCE must be file:PATH or fd:N");
    if (src.rfind("file:", 0) == 0) {
        std::string path = src.substr(5);
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return io_error(what + " file '" + path + "'", "cannot read");
        if (!S_ISREG(st.st_mode)) return input_error(what + " file '" + path + "'", "is not a regular file");
        if (st.st_mode & (S_IRWXG | S_IRWXO))
            return input_error(what + " file '" + path + "'", "is readable by other users (chmod 600 it)");
        auto text = io::read_input(path);
        if (!text) return text.error();
        v = first_line(*text, what);
    } else if (src.rfind("fd:", 0) == 0) {
        std::string n = src.substr(3);
        if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos || std::stoi(n) < 3)
            return input_error(what, "fd:N needs a descriptor number of 3 or more");
        v = read_fd(std::stoi(n), what);
    }
    if (!v) return v.error();
    c.value = std::move(*v);
    c.placeholder = make_placeholder();
    return c;
}

Injection inject_credentials(const std::vector<Credential>& creds, const std::string& host,
                             cc::http::Headers& headers, const std::string& target, bool may_inject) {
    Injection r;
    auto refuse = [&](const Credential& c, const std::string& where) {
        r.refused = true;
        r.reason = "the placeholder of credential " + c.name + " " + where;
        r.injected.clear();
        return r;
    };
    auto allowed = [&](const Credential& c) {
        return may_inject && std::find(c.hosts.begin(), c.hosts.end(), host) != c.hosts.end();
    };
    const std::string not_here = may_inject ? "sent to " + host + ", a host it is not for"
                                            : "sent to " + host + " in plain HTTP (it is only injected into TLS this proxy terminates)";
    for (const auto& c : creds)
        if (target.find(c.placeholder) != std::string::npos)
            return refuse(c, "in the request target (send it in a header)");
    for (auto& h : headers) {
        const bool auth = iequal(h.name, "authorization");
        for (const auto& c : creds) {
            if (h.value.find(c.placeholder) == std::string::npos) continue;
            // Only the Authorization header carries a credential: a header
            // the server might echo or store (User-Agent, a custom one) would
            // hand the real value back to the sandbox.
            if (!auth) return refuse(c, "in header " + h.name + " (only Authorization carries it)");
            if (!allowed(c)) return refuse(c, not_here);
            replace_all(h.value, c.placeholder, c.value);
            r.injected.push_back(c.name);
        }
        if (!auth) {
            // Nor hidden in a Basic credential of another header.
            if (auto raw = basic_decoded(h.value))
                for (const auto& c : creds)
                    if (raw->find(c.placeholder) != std::string::npos)
                        return refuse(c, "in header " + h.name + " (only Authorization carries it)");
            continue;
        }
        auto raw = basic_decoded(h.value);
        if (!raw) continue;
        bool changed = false;
        for (const auto& c : creds) {
            if (raw->find(c.placeholder) == std::string::npos) continue;
            if (!allowed(c)) return refuse(c, not_here);
            replace_all(*raw, c.placeholder, c.value);
            r.injected.push_back(c.name);
            changed = true;
        }
        if (changed) h.value = basic_encoded(*raw);
    }
    std::sort(r.injected.begin(), r.injected.end());
    r.injected.erase(std::unique(r.injected.begin(), r.injected.end()), r.injected.end());
    return r;
}

}  // namespace cc::net
