// Connections and DNS queries captured in a sandbox's network namespace
// (cc-wrap --capture). There every destination address is local (a `local`
// route for 0.0.0.0/0 and ::/0 on loopback), so a connection to any address
// reaches the listener cc-wrap bound to the wildcard address of that port,
// and the accepted socket's own address is where the client meant to go. An
// address of the fake pool stands for the name the sandbox's resolver gave
// it out for; any other address is a literal. From there the connection is
// decided exactly as a CONNECT to that name and port: the same vetting
// (rules, resolution, addresses, approver), the same tunnel (server-name
// checks on TLS ports), interception, and the same connection line.
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_set>

#include "cc/net/intercept.hpp"
#include "cc/net/relay.hpp"

namespace cc::net::detail {

namespace {

// The client learns of a refusal as a reset connection: the kernel
// completed its handshake before anyone could decide.
void reset_client(Conn& c) {
    linger l{1, 0};
    ::setsockopt(c.client.native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

}  // namespace

awaitable<void> serve_captured(Server& srv, std::shared_ptr<Conn> c, std::string client, std::string busy) {
    Record rec(srv, c, "captured", client);
    try {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        std::optional<Address> dst;
        std::uint16_t port = 0;
        if (::getsockname(c->client.native_handle(), reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
            dst = address_of(reinterpret_cast<sockaddr*>(&ss));
            port = port_of(reinterpret_cast<sockaddr*>(&ss));
        }
        if (!dst || port == 0) {
            rec.j["reason"] = "no original destination";
            reset_client(*c);
            co_return;
        }
        rec.j["port"] = port;
        std::string host = dst->to_string();
        if (FakePool::in_pool(*dst)) {
            auto name = srv.sh.fake_pool.name_for(*dst);
            if (!name) {
                rec.j["host"] = host;
                rec.decide(Verdict{false, "capture",
                                   "an address of the name pool " + std::string(FakePool::range()) +
                                       " that the sandbox's resolver never gave out",
                                   "destination_ip_prohibited"});
                reset_client(*c);
                co_return;
            }
            host = *name;
            rec.j["fakeAddress"] = dst->to_string();
        }
        rec.j["host"] = host;
        if (!busy.empty()) {
            rec.decide(Verdict{false, "limit", busy, "connection_limit_reached"});
            reset_client(*c);
            co_return;
        }
        auto t = canonical_target(host);
        if (!t) {
            rec.j["reason"] = t.error().one_line();
            reset_client(*c);
            co_return;
        }
        t->port = port;
        Vetting v = co_await vet(srv, *t, rec);
        rec.decide(v.verdict);
        if (!v.verdict.allow) {
            reset_client(*c);
            co_return;
        }
        Dialed d = co_await dial(srv, c, v.addrs, t->port);
        if (!d.ok) {
            rec.j["error"] = std::strerror(d.err);
            reset_client(*c);
            co_return;
        }
        rec.j["address"] = d.address;
        if (srv.sh.interceptor && srv.sh.interceptor->intercepts(t->host)) {
            rec.j["intercepted"] = true;
            std::string why;
            auto up = co_await open_upstream_tls(srv, c, *t, why);
            if (!up) {
                rec.decide(Verdict{false, "intercept", why, "tls_certificate_error"});
                reset_client(*c);
                co_return;
            }
            co_await serve_intercepted(srv, c, *t, std::move(up), rec);
            co_return;
        }
        co_await tunnel(srv, c, *t, std::string(), rec);
    } catch (const std::exception& e) {
        note_error(srv, "captured", e);
        if (!rec.j.contains("error")) rec.j["error"] = e.what();
    }
}

namespace {

struct Datagram {
    std::string data;
    sockaddr_storage from{};
    socklen_t from_len = 0;
    // Where the query was sent (IP_PKTINFO / IPV6_PKTINFO): the answer comes
    // from there, as a connected client expects.
    bool have_to = false;
    in_pktinfo to4{};
    in6_pktinfo to6{};
};

bool receive(int fd, Datagram& d) {
    char buf[4096];
    alignas(cmsghdr) char ctl[256];
    iovec iov{buf, sizeof buf};
    msghdr m{};
    m.msg_name = &d.from;
    m.msg_namelen = sizeof d.from;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    ssize_t n = ::recvmsg(fd, &m, MSG_DONTWAIT);
    if (n < 0) return false;
    d.data.assign(buf, static_cast<std::size_t>(n));
    d.from_len = m.msg_namelen;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
        if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
            std::memcpy(&d.to4, CMSG_DATA(cm), sizeof d.to4);
            d.have_to = true;
        } else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
            std::memcpy(&d.to6, CMSG_DATA(cm), sizeof d.to6);
            d.have_to = true;
        }
    }
    return true;
}

// `m`'s one control message: `v` at level and type.
template <class T>
void put_cmsg(msghdr& m, int level, int type, const T& v) {
    m.msg_controllen = CMSG_SPACE(sizeof(T));
    cmsghdr* cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = level;
    cm->cmsg_type = type;
    cm->cmsg_len = CMSG_LEN(sizeof(T));
    std::memcpy(CMSG_DATA(cm), &v, sizeof v);
}

void answer(int fd, const Datagram& d, const std::string& reply) {
    iovec iov{const_cast<char*>(reply.data()), reply.size()};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(in6_pktinfo))] = {};
    msghdr m{};
    m.msg_name = const_cast<sockaddr_storage*>(&d.from);
    m.msg_namelen = d.from_len;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (d.have_to) {
        m.msg_control = ctl;
        if (d.from.ss_family == AF_INET) {
            in_pktinfo pi{};
            pi.ipi_spec_dst = d.to4.ipi_addr;
            put_cmsg(m, IPPROTO_IP, IP_PKTINFO, pi);
        } else {
            in6_pktinfo pi{};
            pi.ipi6_addr = d.to6.ipi6_addr;
            put_cmsg(m, IPPROTO_IPV6, IPV6_PKTINFO, pi);
        }
    }
    (void)::sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

// The DNS answer's verdict for a name: what a CONNECT to it would get from
// the name rules on a port its allow entries admit (no resolution, no ask).
// `canonical` gets the name the rules saw.
Verdict dns_verdict(const Server& srv, const std::string& name, std::string& canonical) {
    auto t = canonical_target(name);
    if (!t) return Verdict{false, "malformed", "not a host name: " + t.error().one_line(), "dns_error"};
    if (t->address) return Verdict{false, "capture", "an address asked as a name", "dns_error"};
    canonical = t->host;
    // A port its allow entries admit (443 when none does, or all do): the
    // name rules then say what a connection to it would meet before any
    // address is known. Report mode answers what it would only report.
    auto ports = srv.cfg.rules->allowed_ports(*t);
    t->port = ports && !ports->any && !ports->ports.empty() ? ports->ports.front() : 443;
    Verdict v = srv.cfg.rules->check_target(*t);
    if (srv.cfg.report) v = report_only(v);
    return v;
}

// One query: its answer, and its connection line.
// One sandbox may be given this many names: the pool is shared by every
// sandbox a cc-egress serves, and one that asks for names without end (an
// allow entry like *.example.com admits any number) must not use it up.
constexpr std::size_t k_names_per_resolver = 8192;

void answer_query(Server& srv, int fd, const Datagram& d, const std::string& listener,
                  const std::shared_ptr<EventSink>& sink, std::unordered_set<std::string>& given) {
    auto conn = std::make_shared<Conn>(Sock(srv.io));
    conn->sink = sink;
    Record rec(srv, conn, "dns",
               describe_client(
                   asio::generic::stream_protocol::endpoint(reinterpret_cast<const sockaddr*>(&d.from), d.from_len),
                   listener));
    std::string why;
    std::uint16_t id = 0;
    auto q = parse_dns_query(d.data, why, &id);
    if (!q) {
        rec.j["reason"] = "malformed DNS query: " + why;
        if (d.data.size() >= 12) answer(fd, d, dns_error_reply(id, DnsRcode::formerr));
        return;
    }
    rec.j["host"] = q->name;
    const char* type = dns_type_name(q->qtype);
    rec.j["qtype"] = type ? std::string(type) : "TYPE" + std::to_string(q->qtype);
    if (q->qclass != 1) {
        rec.j["reason"] = "DNS class " + std::to_string(q->qclass) + " (only IN is answered)";
        answer(fd, d, dns_reply(d.data, *q, DnsRcode::notimp));
        return;
    }
    std::string name;
    Verdict v = dns_verdict(srv, q->name, name);
    if (!v.allow) {
        rec.decide(v);
        answer(fd, d, dns_reply(d.data, *q, DnsRcode::nxdomain));
        return;
    }
    if (!given.count(name) && given.size() >= k_names_per_resolver) {
        rec.decide(
            Verdict{false, "capture",
                    "this sandbox's resolver gave out " + std::to_string(k_names_per_resolver) + " names already",
                    "dns_error"});
        answer(fd, d, dns_reply(d.data, *q, DnsRcode::servfail));
        return;
    }
    given.insert(name);
    std::optional<Address> a = srv.sh.fake_pool.address_for(name);
    if (!a) {
        rec.decide(
            Verdict{false, "capture", std::string("the name pool ") + FakePool::range() + " is used up", "dns_error"});
        answer(fd, d, dns_reply(d.data, *q, DnsRcode::servfail));
        return;
    }
    rec.decide(v);
    // Only A carries an address; every other type of an admitted name has
    // no record (NODATA), so clients go on with A.
    if (q->qtype == 1) rec.j["address"] = a->to_string();
    answer(fd, d, dns_reply(d.data, *q, DnsRcode::noerror, q->qtype == 1 ? a : std::nullopt));
}

// A datagram socket served on this loop: closed with the loop, or with the
// handover that brought it (close_listeners); dropped from the list when its
// coroutine ends.
asio::posix::stream_descriptor& adopt_datagram(Server& srv, int fd) {
    return *srv.datagrams.emplace_back(std::make_unique<asio::posix::stream_descriptor>(srv.io, fd));
}

void drop_datagram(Server& srv, const asio::posix::stream_descriptor& d) {
    auto& list = srv.datagrams;
    list.erase(std::remove_if(list.begin(), list.end(), [&](const auto& p) { return p.get() == &d; }), list.end());
}

// Where a copy of a UDP datagram or TCP SYN was going (both headers start
// with the source and destination ports); nullopt for what is not reported:
// DNS (the resolver's own traffic, both ways), loopback, where a service of
// the sandbox's own may listen, and a SYN to a port a listener captures.
struct Destination {
    Address to;
    std::uint16_t port = 0;
};

std::optional<Destination> report_destination(const unsigned char* b, std::size_t n, int family, int proto,
                                              const std::optional<Address>& v6_to,
                                              const std::set<std::uint16_t>& captured) {
    const unsigned char* l4 = b;
    Destination d;
    if (family == AF_INET) {
        if (n < 20 || (b[0] >> 4) != 4 || b[9] != proto) return std::nullopt;
        std::size_t ihl = (b[0] & 0x0fu) * 4u;
        if (ihl < 20 || n < ihl + 8) return std::nullopt;
        d.to = Address::v4((std::uint32_t{b[16]} << 24) | (std::uint32_t{b[17]} << 16) | (std::uint32_t{b[18]} << 8) |
                           b[19]);
        l4 = b + ihl;
    } else {
        if (n < 8 || !v6_to) return std::nullopt;
        d.to = *v6_to;
    }
    std::uint16_t sport = static_cast<std::uint16_t>((l4[0] << 8) | l4[1]);
    d.port = static_cast<std::uint16_t>((l4[2] << 8) | l4[3]);
    if (proto == IPPROTO_UDP && (d.port == 53 || sport == 53)) return std::nullopt;
    if (proto == IPPROTO_TCP && captured.count(d.port)) return std::nullopt;
    static const Cidr loop4{Address::v4(0x7f000000u), 8};  // 127.0.0.0/8
    if (loop4.contains(d.to) || d.to.to_string() == "::1") return std::nullopt;
    return d;
}

}  // namespace

awaitable<void> serve_report(Server& srv, int fd, std::shared_ptr<const std::set<std::uint16_t>> captured,
                             std::shared_ptr<EventSink> sink) {
    auto& desc = adopt_datagram(srv, fd);
    sockaddr_storage own{};
    socklen_t own_len = sizeof own;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&own), &own_len);
    const int family = own.ss_family;
    int proto = 0;
    socklen_t pl = sizeof proto;
    ::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl);
    const bool udp = proto == IPPROTO_UDP;
    const Verdict refused =
        udp ? Verdict{false, "udp", "UDP other than DNS is not relayed: it reaches nothing outside the sandbox",
                      "destination_ip_prohibited"}
            : Verdict{false, "port not captured",
                      "no listener takes this port in the sandbox (cc-wrap --capture-port adds one): the kernel "
                      "refused the connection",
                      "destination_ip_prohibited"};
    // Each destination once: a sender of many datagrams is one line, and the
    // set is bounded.
    std::set<std::string> seen;
    constexpr std::size_t max_seen = 4096;
    while (!srv.stopping && desc.is_open()) {
        ErrorCode ec;
        co_await desc.async_wait(asio::posix::descriptor_base::wait_read, asio::redirect_error(use_awaitable, ec));
        if (ec) break;
        for (int i = 0; i < 64 && desc.is_open(); ++i) {
            unsigned char buf[2048];
            alignas(cmsghdr) char ctl[128];
            iovec iov{buf, sizeof buf};
            msghdr m{};
            m.msg_iov = &iov;
            m.msg_iovlen = 1;
            m.msg_control = ctl;
            m.msg_controllen = sizeof ctl;
            ssize_t n = ::recvmsg(desc.native_handle(), &m, MSG_DONTWAIT);
            if (n < 0) break;
            std::optional<Address> v6_to;
            for (cmsghdr* cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
                if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
                    in6_pktinfo pi{};
                    std::memcpy(&pi, CMSG_DATA(cm), sizeof pi);
                    sockaddr_in6 sa{};
                    sa.sin6_family = AF_INET6;
                    sa.sin6_addr = pi.ipi6_addr;
                    v6_to = address_of(reinterpret_cast<sockaddr*>(&sa));
                }
            auto d = report_destination(buf, static_cast<std::size_t>(n), family, proto, v6_to, *captured);
            if (!d) continue;
            srv.sh.metrics.error(udp ? "udp_refused" : "port_not_captured");
            std::string key = d->to.to_string() + "|" + std::to_string(d->port);
            if (seen.size() >= max_seen || !seen.insert(key).second) continue;
            try {
                auto conn = std::make_shared<Conn>(Sock(srv.io));
                conn->sink = sink;
                Record rec(srv, conn, udp ? "udp" : "tcp", "sandbox");
                std::string host = d->to.to_string();
                if (FakePool::in_pool(d->to))
                    if (auto name = srv.sh.fake_pool.name_for(d->to)) {
                        rec.j["fakeAddress"] = host;
                        host = *name;
                    }
                rec.j["host"] = host;
                rec.j["port"] = d->port;
                rec.decide(refused);
            } catch (const std::exception& e) {
                note_error(srv, udp ? "udp" : "tcp", e);
            }
        }
    }
    drop_datagram(srv, desc);
}

awaitable<void> serve_dns(Server& srv, int fd, std::string listener, std::shared_ptr<EventSink> sink) {
    auto& desc = adopt_datagram(srv, fd);
    std::unordered_set<std::string> given;  // names this socket's sandbox was given
    while (!srv.stopping && desc.is_open()) {
        ErrorCode ec;
        co_await desc.async_wait(asio::posix::descriptor_base::wait_read, asio::redirect_error(use_awaitable, ec));
        if (ec) co_return;
        // A burst at a time, so one sandbox's flood cannot hold the loop.
        for (int i = 0; i < 64 && desc.is_open(); ++i) {
            Datagram d;
            if (!receive(desc.native_handle(), d)) break;
            try {
                answer_query(srv, desc.native_handle(), d, listener, sink, given);
            } catch (const std::exception& e) {
                note_error(srv, "dns", e);
            }
        }
    }
    // Closed (the sender left, or shutdown): gone from the loop's list.
    drop_datagram(srv, desc);
}

}  // namespace cc::net::detail
