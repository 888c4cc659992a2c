// cc-wrap --capture: programs that ignore the proxy variables (here with
// them unset: curl, Python's socket module, git, getent) reach the network
// only through cc-egress's decision, by name and by literal address, and
// every attempt is in the connection log.
#include "egress_fixture.hpp"

#include <sys/stat.h>

#include <fstream>

using namespace egress_fixture;

namespace {

void spit(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

// Every proxy variable unset: the command is a program that ignores them.
const std::string k_no_proxy =
    "unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy GIT_SSH_COMMAND; ";

// A Python one-liner: connect to HOST:PORT, send an HTTP/1.0 request, print
// the status line, or the error's class name.
std::string py_get(const std::string& label, const std::string& host, std::uint16_t port) {
    return "python3 -c 'import socket,sys\n"
           "try:\n"
           " s=socket.create_connection((\"" +
           host + "\"," + std::to_string(port) +
           "),timeout=10)\n"
           " s.sendall(b\"GET /hello HTTP/1.0\\r\\nHost: " +
           host +
           "\\r\\n\\r\\n\")\n"
           " d=s.recv(4096)\n"
           " print(\"" +
           label +
           "=\"+(d.split(b\"\\r\\n\")[0].decode() if d else \"closed\"))\n"
           "except Exception as e:\n"
           " print(\"" +
           label + "=\"+type(e).__name__)\n'; ";
}

struct Capture {
    std::string dir;
    Origin origin{"0", {}};
    Origin other{"0", {}};  // a second local service: reachable from the host, never named
    std::unique_ptr<Dns> dns;
    std::unique_ptr<Egress> eg;
    std::string ready_path, spec_path;

    explicit Capture(std::vector<std::string> egress_args = {}) {
        static int n = 0;
        dir = cc::test::scratch_dir() + "/capture-" + std::to_string(n++);
        ::mkdir(dir.c_str(), 0755);
        ::chmod(dir.c_str(), 0755);
        dns = std::make_unique<Dns>(std::map<std::string, std::string>{
            {"origin.test", "127.0.0.1"}, {"other.test", "127.0.0.1"}, {"git.test", "127.0.0.1"}});
        const std::string p = std::to_string(origin.port);
        std::vector<std::string> args = {"--no-baseline",  "--dns-server",     dns->server(),
                                         "--allow",        "origin.test:" + p, "--allow",
                                         "127.0.0.1:" + p, "--fd-inbox",       dir + "/inbox.sock"};
        args.insert(args.end(), egress_args.begin(), egress_args.end());
        eg = std::make_unique<Egress>(args);
        ready_path = dir + "/ready.json";
        spit(ready_path, eg->ready.dump());
        ::chmod(ready_path.c_str(), 0644);
        spec_path = dir + "/spec.json";
        spit(spec_path,
             json{{"sessionId", "cap"}, {"workspaceId", "ws"}, {"egressAllowlist", {"origin.test:" + p}}}.dump());
        ::chmod(spec_path.c_str(), 0644);
    }
    // `before`: run with the proxy variables still set, then the rest without.
    cc::test::RunResult wrap(const std::string& script, std::vector<std::string> extra = {},
                             const std::string& before = "") {
        std::vector<std::string> argv = {bin("cc-wrap"), "--spec", spec_path, "--egress", ready_path};
        argv.insert(argv.end(), extra.begin(), extra.end());
        argv.insert(argv.end(), {"--", "sh", "-c", before + k_no_proxy + script});
        return cc::test::run(argv);
    }
    std::vector<json> lines(const std::string& proto) {
        std::vector<json> out;
        for (const auto& l : eg->lines)
            if (l.value("proto", "") == proto) out.push_back(l);
        return out;
    }
};

}  // namespace

TEST_CASE("capture: clients that ignore the proxy variables reach allowed names through cc-egress, nothing else") {
    if (!cc::test::bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Capture c;
    REQUIRE(c.origin.port != 0);
    REQUIRE(c.other.port != 0);
    REQUIRE(c.eg->ready.value("event", "") == "ready");
    const std::string p = std::to_string(c.origin.port), q = std::to_string(c.other.port);
    // A UDP service on the host: reachable from the host itself.
    int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const std::uint16_t udp_port = bind_loopback(udp);
    REQUIRE(udp_port != 0);
    auto host_udp =
        cc::test::run({"python3", "-c",
                       "import socket; socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(b'host',('127.0.0.1'," +
                           std::to_string(udp_port) + "))"});
    REQUIRE(host_udp.status == 0);
    char got[64];
    pollfd pf{udp, POLLIN, 0};
    REQUIRE(::poll(&pf, 1, 5000) == 1);
    REQUIRE(::recv(udp, got, sizeof got, 0) == 4);
    CHECK(std::string(got, 4) == "host");
    // What the refusals below refuse is there: on the host, both names
    // resolve (the test's DNS) and both services answer.
    CHECK(http_code(curl({"-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:" + q + "/hello"})) == "200");
    // Without --capture such a client has no way out at all: the sandbox's
    // network namespace has loopback only.
    auto before = c.wrap(py_get("plain", "127.0.0.1", c.origin.port));
    INFO(before.err);
    CHECK(before.out == "plain=ConnectionRefusedError\n");

    const std::string script =
        "getent hosts origin.test | cut -d\" \" -f1; " + py_get("name", "origin.test", c.origin.port) +
        "curl -sS --max-time 10 -o /dev/null -w \"curl=%{http_code}\\n\" http://origin.test:" + p + "/hello; " +
        "git -c http.proxy= ls-remote http://origin.test:" + p + "/o/r.git >/dev/null 2>&1; echo git=$?; " +
        "getent hosts other.test >/dev/null; echo other-dns=$?; " + py_get("literal", "127.0.0.1", c.origin.port) +
        py_get("unnamed", "127.0.0.1", c.other.port) + py_get("metadata", "169.254.169.254", c.origin.port) +
        py_get("pool", "198.18.200.200", c.origin.port) +
        // UDP other than DNS: to an allowed name's port where the host has a
        // UDP service, and twice to a public address.
        "python3 -c 'import socket\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
        "s.sendto(b\"cc-udp\",(\"origin.test\"," +
        std::to_string(udp_port) +
        "))\n"
        "s.sendto(b\"a\",(\"203.0.113.9\",4444)); s.sendto(b\"b\",(\"203.0.113.9\",4444))\n"
        "print(\"udp=sent\")'; " +
        py_get("uncaptured", "origin.test", 9);
    // The proxy variables still work beside capture (curl's first request).
    auto r =
        c.wrap(script, {"--capture", "--capture-port", q},
               "curl -sS --max-time 10 -o /dev/null -w \"proxy=%{http_code}\\n\" http://origin.test:" + p + "/hello; ");
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::istringstream out(r.out);
    std::string fake;
    std::getline(out, fake);
    CHECK(fake == "proxy=200");
    std::getline(out, fake);
    CHECK(fake.rfind("198.18.", 0) == 0);  // a pool address, not the real one
    CHECK(r.out.find("name=HTTP/1.1 200 OK\n") != std::string::npos);
    CHECK(r.out.find("curl=200\n") != std::string::npos);
    // git reached the origin (it has no repository there: 128 on its 404).
    CHECK(r.out.find("git=128\n") != std::string::npos);
    // A name the allowlist refuses does not resolve (NXDOMAIN: getent 2).
    CHECK(r.out.find("other-dns=2\n") != std::string::npos);
    // An allowed literal goes through; an unnamed local service, the
    // metadata address and a pool address never given out are reset.
    CHECK(r.out.find("literal=HTTP/1.1 200 OK\n") != std::string::npos);
    CHECK(r.out.find("unnamed=ConnectionResetError\n") != std::string::npos);
    CHECK(r.out.find("metadata=ConnectionResetError\n") != std::string::npos);
    CHECK(r.out.find("pool=ConnectionResetError\n") != std::string::npos);

    REQUIRE(c.eg->stop() == 0);
    // The proxied request is an http line; every attempt is in the connection log, decided as a CONNECT would be.
    auto captured = c.lines("captured");
    auto find = [&](const std::string& host, const std::string& port) -> const json* {
        for (const auto& l : captured)
            if (l.value("host", "") == host && std::to_string(l.value("port", 0)) == port) return &l;
        return nullptr;
    };
    const json* named = find("origin.test", p);
    REQUIRE(named);
    CHECK((*named)["decision"] == "allow");
    CHECK((*named)["fakeAddress"].get<std::string>() == fake);
    CHECK((*named)["address"] == "127.0.0.1");
    const json* unnamed = find("127.0.0.1", q);
    REQUIRE(unnamed);
    CHECK((*unnamed)["decision"] == "deny");
    CHECK((*unnamed)["rule"] == "port not allowed");
    const json* metadata = find("169.254.169.254", p);
    REQUIRE(metadata);
    CHECK((*metadata)["decision"] == "deny");
    CHECK((*metadata)["rule"].get<std::string>().rfind("always-deny", 0) == 0);
    const json* pool = find("198.18.200.200", p);
    REQUIRE(pool);
    CHECK((*pool)["rule"] == "capture");
    bool other_nx = false;
    for (const auto& l : c.lines("dns"))
        if (l.value("host", "") == "other.test") {
            other_nx = true;
            CHECK(l["decision"] == "deny");
            CHECK(l["rule"] == "no allow entry");
        }
    CHECK(other_nx);
    // UDP: reported once a destination, and nothing reached the host's service.
    CHECK(r.out.find("udp=sent\n") != std::string::npos);
    auto udp_lines = c.lines("udp");
    int to_public = 0;
    bool to_pool = false;
    for (const auto& l : udp_lines) {
        CHECK(l["decision"] == "deny");
        CHECK(l["rule"] == "udp");
        if (l["host"] == "203.0.113.9" && l["port"] == 4444) ++to_public;
        if (l["host"] == "origin.test" && l.value("fakeAddress", "").rfind("198.18.", 0) == 0 && l["port"] == udp_port)
            to_pool = true;
    }
    CHECK(to_public == 1);
    CHECK(to_pool);
    CHECK(::recv(udp, got, sizeof got, MSG_DONTWAIT) == -1);
    // A port nothing captures: refused by the kernel, and reported once; no
    // tcp line for a captured port.
    CHECK(r.out.find("uncaptured=ConnectionRefusedError\n") != std::string::npos);
    auto tcp_lines = c.lines("tcp");
    REQUIRE(tcp_lines.size() == 1);
    CHECK(tcp_lines[0]["host"] == "origin.test");
    CHECK(tcp_lines[0]["port"] == 9);
    CHECK(tcp_lines[0]["rule"] == "port not captured");
    CHECK(tcp_lines[0]["decision"] == "deny");
    // Every line, of every proto, matches the published schema.
    if (cc::test::have_program("python3")) {
        const std::string lines_file = c.dir + "/lines.jsonl";
        {
            std::ofstream f(lines_file);
            for (const auto& l : c.eg->lines) f << l.dump() << "\n";
        }
        auto v = cc::test::run({"python3", "-c",
                                "import json,sys,jsonschema\n"
                                "v=jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))\n"
                                "ls=[json.loads(l) for l in open(sys.argv[2])]\n"
                                "[v.validate(l) for l in ls]\n"
                                "print(sorted(set(l['proto'] for l in ls)))\n",
                                cc::test::source_dir() + "/share/cc/schema/egress-connection.schema.json", lines_file});
        if (v.err.find("No module named 'jsonschema'") == std::string::npos) {
            INFO(v.err);
            CHECK(v.status == 0);
            CHECK(v.out == "['captured', 'dns', 'http', 'tcp', 'udp']\n");
        }
    }
    ::close(udp);
    // The test's resolver was asked for origin.test by cc-egress alone,
    // never for the refused name.
    auto asked = c.dns->questions();
    CHECK(std::find(asked.begin(), asked.end(), "origin.test") != asked.end());
    CHECK(std::find(asked.begin(), asked.end(), "other.test") == asked.end());
}

TEST_CASE("capture: bad combinations start nothing (exit 2, one line)") {
    Capture c;
    auto r = cc::test::run({bin("cc-wrap"), "--spec", c.spec_path, "--capture-port", "22", "--", "true"});
    CHECK(r.status == 2);
    CHECK(r.err.find("cc-wrap: --capture-port: applies with --capture only\n") != std::string::npos);
    r = cc::test::run({bin("cc-wrap"), "--spec", c.spec_path, "--backend", "none", "--capture", "--", "true"});
    CHECK(r.status == 2);
    CHECK(r.err.find("cc-wrap: --capture: needs the native backend (bubblewrap) with the dispatch profile\n") !=
          std::string::npos);
    r = cc::test::run({bin("cc-wrap"), "--spec", c.spec_path, "--capture", "--capture-port", "70000", "--", "true"});
    CHECK(r.status == 2);
    CHECK(r.err.find("cc-wrap: --capture-port 70000: is not a port (1-65535)\n") != std::string::npos);
}

// One cc-egress shared by several sandboxes: each sandbox's handed-over
// listeners are their own client for --max-client-connections, although
// every sandbox's listeners have the same address (127.0.0.1:3128, each in
// its own namespace) and every client there is 127.0.0.1.
TEST_CASE("shared cc-egress: one sandbox holding its share of tunnels leaves another sandbox served") {
    if (!cc::test::bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Capture c({"--max-client-connections", "2"});
    REQUIRE(c.eg->ready.value("maxClientConnections", 0) == 2);
    const std::string p = std::to_string(c.origin.port);
    // Sandbox A opens three tunnels through its proxy and holds them.
    const std::string hold =
        "exec python3 -c 'import socket,sys,time\n"
        "codes=[]\n"
        "held=[]\n"
        "for i in range(3):\n"
        " s=socket.create_connection((\"127.0.0.1\",3128))\n"
        " s.sendall(b\"CONNECT 127.0.0.1:" +
        p + " HTTP/1.1\\r\\nHost: 127.0.0.1:" + p +
        "\\r\\n\\r\\n\")\n"
        " codes.append(s.recv(4096).split(b\" \")[1].decode())\n"
        " held.append(s)\n"
        "print(\"held\", *codes, flush=True)\n"
        "time.sleep(60)\n'";
    bp::ipstream a_out;
    bp::child a(bin("cc-wrap"),
                std::vector<std::string>{"--spec", c.spec_path, "--egress", c.ready_path, "--", "sh", "-c", hold},
                bp::std_out > a_out, bp::std_err > bp::null);
    std::string line;
    REQUIRE(std::getline(a_out, line));
    // Its third is over its share: the cap is in force.
    CHECK(line == "held 200 200 503");
    // Sandbox B, its listeners at the same address, is served meanwhile.
    auto b = c.wrap("", {}, "curl -sS --max-time 10 http://127.0.0.1:" + p + "/hello; ");
    CHECK(b.out == "hello\n");
    // A is ended the way an agent server ends one (SIGTERM, passed on).
    ::kill(a.id(), SIGTERM);
    a.wait();
    CHECK(a.exit_code() == 143);
}

// ssh without a ProxyCommand (GIT_SSH_COMMAND unset): it reaches the host's
// SSH port by name through the capture, and the server hears ssh's own
// identification string.
TEST_CASE("capture: ssh with no ProxyCommand reaches an allowed SSH server by name") {
    if (!cc::test::bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!cc::test::have_program("ssh")) CC_SKIP("ssh not installed");
    const std::string server =
        "import socket,sys\n"
        "l=socket.socket(); l.bind((\"127.0.0.1\",0)); l.listen(4)\n"
        "print(l.getsockname()[1], flush=True)\n"
        "c,_=l.accept(); c.sendall(b\"SSH-2.0-cc-test\\r\\n\")\n"
        "d=b\"\"\n"
        "while b\"\\n\" not in d:\n"
        " x=c.recv(256)\n"
        " if not x: break\n"
        " d+=x\n"
        "open(sys.argv[1],\"wb\").write(d.split(b\"\\r\\n\")[0])\n";
    bp::ipstream out;
    const std::string heard = cc::test::scratch_dir() + "/ssh-heard";
    bp::child sshd(bp::search_path("python3"), std::vector<std::string>{"-c", server, heard}, bp::std_out > out);
    std::string port_line;
    REQUIRE(std::getline(out, port_line));
    const std::string sp = port_line;
    Capture c({"--allow", "git.test:" + sp, "--allow", "127.0.0.1:" + sp});
    auto r = c.wrap(
        "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 "
        "-p " +
            sp + " git@git.test true; echo ssh=$?",
        {"--capture", "--capture-port", sp});
    INFO(r.err);
    // cc-wrap ended on its own, with the command (a hang would be killed by run()).
    CHECK(r.status == 0);
    CHECK(r.out == "ssh=255\n");  // the test server speaks no further than its banner
    sshd.wait();
    CHECK(slurp(heard).rfind("SSH-2.0-OpenSSH", 0) == 0);
    REQUIRE(c.eg->stop() == 0);
    const json* line = c.eg->find("git.test", "captured");
    REQUIRE(line);
    CHECK((*line)["decision"] == "allow");
    CHECK((*line)["port"] == std::stoi(sp));
}

// A captured connection to a TLS port meets the tunnel's checks exactly as a
// CONNECT would: the server name must be the name the address stands for
// (or itself allowed), and plain bytes there are refused.
TEST_CASE("capture: TLS server-name and TLS-port checks hold on the captured path") {
    if (!cc::test::bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    const std::string pki = cc::test::scratch_dir() + "/capture-pki";
    ::mkdir(pki.c_str(), 0700);
    make_origin_pki(pki, "DNS:origin.test,DNS:evil.test");
    Origin tls("0", {{"ORIGIN_TLS_CERT", pki + "/origin.pem"},
                     {"ORIGIN_TLS_KEY", pki + "/origin.key"},
                     {"ORIGIN_LOG", pki + "/origin.log"}});
    REQUIRE(tls.port != 0);
    const std::string t = std::to_string(tls.port);
    Capture c({"--allow", "origin.test:" + t, "--allow", "127.0.0.1:" + t, "--tls-ports", "443," + t});
    // Without the proxy, the mismatched server name is served by this origin.
    auto direct =
        curl({"-sk", "--connect-to", "evil.test:" + t + ":127.0.0.1:" + t, "https://evil.test:" + t + "/hello"});
    CHECK(direct.out == "hello\n");
    auto r = c.wrap("curl -sSk --max-time 10 -w ' ok\\n' https://origin.test:" + t +
                        "/hello; echo good=$?; "
                        "curl -sSk --max-time 10 --connect-to evil.test:" +
                        t + ":origin.test:" + t + " https://evil.test:" + t +
                        "/hello; echo sni=$?; "
                        "curl -sS --max-time 10 http://origin.test:" +
                        t + "/hello; echo plain=$?; " +
                        // git over HTTPS with no proxy (the test CA is not in the sandbox, hence no verify).
                        "git -c http.proxy= -c http.sslVerify=false ls-remote https://origin.test:" + t +
                        "/o/r.git >/dev/null 2>&1; echo git=$?",
                    {"--capture", "--capture-port", t});
    INFO(r.err);
    // cc-wrap ended on its own, with the command (a hang would be killed by run()).
    CHECK(r.status == 0);
    CHECK(r.out.find("hello\n ok\ngood=0\n") != std::string::npos);
    // The server name evil.test on a tunnel to origin.test: cut before the
    // handshake (curl's 35), and plain HTTP to a TLS port (curl's 56 or 52).
    CHECK(r.out.find("sni=35\n") != std::string::npos);
    // git reached the origin over TLS by name (no repository there: 128).
    CHECK(r.out.find("git=128\n") != std::string::npos);
    CHECK(slurp(pki + "/origin.log").find("GET /o/r.git/info/refs?service=git-upload-pack") != std::string::npos);
    CHECK((r.out.find("plain=56\n") != std::string::npos || r.out.find("plain=52\n") != std::string::npos));
    REQUIRE(c.eg->stop() == 0);
    int sni = 0, plain = 0;
    for (const auto& l : c.lines("captured")) {
        if (l.value("host", "") != "origin.test" || l.value("decision", "") != "deny") continue;
        if (l.value("rule", "") == "tls sni evil.test") ++sni;
        if (l.value("rule", "") == "tls") ++plain;
    }
    CHECK(sni == 1);
    CHECK(plain == 1);
}

// One sandbox cannot use up the name pool every sandbox of a cc-egress
// shares: an allow entry for *.big.test admits any number of names, and
// past its share the sandbox's resolver answers SERVFAIL (names it was
// given keep their addresses).
TEST_CASE("capture: one sandbox's resolver gives out at most 8192 names") {
    if (!cc::test::bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Capture c({"--allow", "*.big.test"});
    const std::string asker =
        "python3 -c 'import socket,struct\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(5); s.connect((\"127.0.0.1\",53))\n"
        "def ask(i,name):\n"
        " q=struct.pack(\">HHHHHH\",i&0xffff,0x100,1,0,0,0)+b\"\".join(bytes([len(l)])+l.encode() for l in "
        "name.split(\".\"))+b\"\\0\\0\\1\\0\\1\"\n"
        " s.send(q); return s.recv(512)[3]&15\n"
        "codes=[ask(i,\"n%d.big.test\"%i) for i in range(8200)]\n"
        "print(codes[:8192].count(0), codes[8192:].count(2), ask(1,\"n0.big.test\"))'";
    auto r = c.wrap(asker, {"--capture"});
    INFO(r.err);
    // cc-wrap ended on its own, with the command (a hang would be killed by run()).
    CHECK(r.status == 0);
    CHECK(r.out == "8192 8 0\n");
    REQUIRE(c.eg->stop() == 0);
    int refused = 0;
    for (const auto& l : c.lines("dns"))
        if (l.value("decision", "") == "deny" &&
            l.value("reason", "") == "this sandbox's resolver gave out 8192 names already")
            ++refused;
    CHECK(refused == 8);
}
