// Unit tests of the pure protocol code in lib/cc/git: pkt-lines, the
// receive-pack request prefix, reports, side-band, HTTP framing, routes.
#include "harness.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <zlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cc/git/ancestry.hpp"
#include "cc/git/http.hpp"
#include "cc/git/pack_scan.hpp"
#include "cc/git/pkt_line.hpp"
#include "cc/git/receive_pack.hpp"
#include "cc/git/redact.hpp"
#include "cc/git/token.hpp"

using namespace cc::git;

namespace {
const std::string A(40, 'a'), B(40, 'b'), Z(40, '0');
const std::string caps = "report-status-v2 side-band-64k quiet object-format=sha1 agent=git/2.39.5";

std::string cmd(const std::string& o, const std::string& n, const std::string& ref, bool first) {
    return pkt(o + " " + n + " " + ref + (first ? std::string(1, '\0') + caps : "") + "\n");
}

cc::Result<bool> feed_bytewise(RequestParser& p, const std::string& bytes) {
    cc::Result<bool> r = false;
    for (char c : bytes) {
        r = p.feed(std::string_view(&c, 1));
        if (!r) return r;
    }
    return r;
}
}  // namespace

TEST_CASE("pkt encodes the length in four lower-case hex digits") {
    CHECK(pkt("unpack ok\n") == "000eunpack ok\n");
    CHECK(pkt("") == "0004");
    CHECK(pkt(std::string(65516, 'x')).substr(0, 4) == "fff0");
}

TEST_CASE("PktReader takes packets across arbitrary slices and refuses bad lengths") {
    PktReader r;
    r.feed("000");
    auto p = r.next();
    REQUIRE(p);
    CHECK(!*p);
    r.feed("9hello0000");
    p = r.next();
    REQUIRE(p);
    REQUIRE(*p);
    CHECK((*p)->payload == "hello");
    p = r.next();
    REQUIRE(p);
    CHECK((*p)->kind == Pkt::Kind::flush);
    PktReader bad;
    bad.feed("zzzz");
    CHECK(!bad.next());
    PktReader three;
    three.feed("0003");
    CHECK(!three.next());
    PktReader huge;
    huge.feed("fff1");
    CHECK(!huge.next());
}

TEST_CASE("RequestParser reads commands, capabilities and push options, leaving the pack") {
    std::string body = cmd(A, B, "refs/heads/main", true) + cmd(Z, B, "refs/heads/new", false) +
                       cmd(A, Z, "refs/heads/gone", false) + "0000" + "PACKdata";
    RequestParser p;
    auto r = feed_bytewise(p, body);
    REQUIRE(r);
    CHECK(*r);
    const auto& req = p.request();
    REQUIRE(req.commands.size() == 3);
    CHECK(req.commands[0].kind() == "update");
    CHECK(req.commands[1].kind() == "create");
    CHECK(req.commands[2].kind() == "delete");
    CHECK(req.has("side-band-64k"));
    CHECK(!req.atomic());
    CHECK(req.sideband_max() == max_sideband64k_data);
    CHECK(p.take_rest() == "PACKdata");

    std::string with_opts = pkt(A + " " + B + " refs/heads/x" + std::string(1, '\0') + "push-options atomic\n") +
                            "0000" + pkt("ci.skip") + pkt("title=hello world") + "0000" + "PACK";
    RequestParser q;
    REQUIRE(*q.feed(with_opts));
    CHECK(q.request().options == std::vector<std::string>{"ci.skip", "title=hello world"});
    CHECK(q.request().atomic());
    CHECK(q.take_rest() == "PACK");
}

TEST_CASE("capabilities are read as git reads them: name=value turns the capability on") {
    // receive-pack's parse_feature_request() takes "push-options=x" as
    // push-options: the options section must be read as options, not as pack.
    std::string body = pkt(A + " " + B + " refs/heads/x" + std::string(1, '\0') +
                           "report-status push-options=yes atomic=1 side-band-64k=x\n") +
                       "0000" + pkt("ci.skip") + "0000" + "PACK";
    RequestParser p;
    REQUIRE(*p.feed(body));
    CHECK(p.request().options == std::vector<std::string>{"ci.skip"});
    CHECK(p.request().atomic());
    CHECK(p.request().sideband_max() == max_sideband64k_data);
    CHECK(p.take_rest() == "PACK");
    // A longer name sharing the prefix is another capability.
    RequestParser q;
    REQUIRE(*q.feed(pkt(A + " " + B + " refs/heads/x" + std::string(1, '\0') + "push-optionsx atomicity\n") + "0000" +
                    "PACK"));
    CHECK(q.request().options.empty());
    CHECK(!q.request().atomic());
    CHECK(q.take_rest() == "PACK");
}

TEST_CASE("push options are capped in count and bytes") {
    std::string head = pkt(A + " " + B + " refs/heads/x" + std::string(1, '\0') + "push-options\n") + "0000";
    std::string many = head;
    for (int i = 0; i < 101; ++i) many += pkt("o" + std::to_string(i));
    RequestParser p;
    auto r = p.feed(many + "0000");
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "more than 100 push options");
    std::string big = head + pkt(std::string(60000, 'x')) + pkt(std::string(6000, 'y')) + "0000";
    RequestParser q;
    auto b = q.feed(big);
    REQUIRE_FALSE(b);
    CHECK(b.error().message == "push options are larger than 65536 bytes");
}

TEST_CASE("Redactor masks a token in every spelling, across slices, keeping lengths") {
    const std::string tok = "ghs_Abc123+/xyz";
    Redactor r(secret_spellings(tok));
    std::string basic = "eC1hY2Nlc3MtdG9rZW46Z2hzX0FiYzEyMysveHl6";  // base64 of x-access-token:ghs_Abc123+/xyz
    std::string input = "a " + tok + " b ghs_Abc123%2B%2Fxyz c Basic " + basic + " d";
    std::string out;
    for (char c : input) out += r.feed(std::string_view(&c, 1));
    out += r.finish();
    CHECK(out.size() == input.size());
    CHECK(out.find(tok) == std::string::npos);
    CHECK(out.find("ghs_Abc123%2B") == std::string::npos);
    CHECK(out.find("Z2hzX0FiYzEyMysveHl6") == std::string::npos);
    CHECK(out.rfind("a ***************", 0) == 0);
    CHECK(r.masked());
    // Bytes that only start like the token are passed on once it is clear they are not it.
    Redactor q(secret_spellings(tok));
    CHECK(q.feed("xx ghs_A") == "xx ");
    CHECK(q.feed("bz") == "ghs_Abz");
    CHECK(!q.masked());
}

TEST_CASE("encode_prefix rebuilds a subset with the capabilities on the new first line") {
    std::string body = pkt("shallow " + A + "\n") + cmd(A, B, "refs/heads/main", true) +
                       cmd(Z, B, "refs/heads/ok", false) + "0000";
    RequestParser p;
    REQUIRE(*p.feed(body));
    auto out = encode_prefix(p.request(), {p.request().commands[1]});
    RequestParser again;
    REQUIRE(*again.feed(out));
    REQUIRE(again.request().commands.size() == 1);
    CHECK(again.request().commands[0].ref == "refs/heads/ok");
    CHECK(again.request().capabilities == p.request().capabilities);
    CHECK(again.request().shallow == std::vector<std::string>{A});
}

TEST_CASE("RequestParser refuses malformed requests") {
    auto fails = [](const std::string& body, const std::string& what) {
        RequestParser p;
        auto r = p.feed(body);
        bool failed = !r || (!*r && !p.finish());
        INFO(what);
        CHECK(failed);
        std::string msg = !r ? r.error().message : p.finish().error().message;
        return msg;
    };
    CHECK(fails("00zz", "bad length").find("bad length") != std::string::npos);
    CHECK(fails(cmd(A, B, "refs/heads/main", true), "missing flush").find("missing flush") != std::string::npos);
    CHECK(fails(cmd(A, B, "refs/heads/" + std::string(2000, 'x'), true) + "0000", "long ref").find("longer than") !=
          std::string::npos);
    fails(pkt(A + " " + B + " refs/heads/main\n") + "0000", "no capabilities");
    fails(cmd("xyz", B, "refs/heads/main", true) + "0000", "bad oid");
    fails(cmd(A, B, "refs/heads/a..b", true) + "0000", "dotdot");
    fails(cmd(A, B, "heads/main", true) + "0000", "not under refs/");
    fails(pkt("push-cert" + std::string(1, '\0') + caps + "\n"), "push-cert");
    fails(std::string("00a"), "truncated");
}

TEST_CASE("a flush alone is the probe of a large push") {
    RequestParser p;
    REQUIRE(*p.feed("0000"));
    CHECK(p.request().is_probe());
}

TEST_CASE("reports carry git's exact bytes, side-band wrapped when asked") {
    std::vector<RefStatus> refs{{"refs/heads/main", false, "Control Center policy: push to refs/heads/main is not allowed"}};
    std::string rep = report_status(refs);
    CHECK(rep ==
          "000eunpack ok\n0055ng refs/heads/main Control Center policy: push to refs/heads/main is not allowed\n0000");
    RequestParser p;
    REQUIRE(*p.feed(cmd(A, B, "refs/heads/main", true) + "0000"));
    std::string body = response_body(p.request(), {}, rep);
    CHECK(body == pkt("\x01" + rep) + "0000");
    std::string with_msg = response_body(p.request(), {"cc-pushgate: rule matched"}, rep);
    CHECK(with_msg.substr(0, 4 + 1 + 26) == pkt("\x02" "cc-pushgate: rule matched\n"));
    CHECK(one_line("a\nb\x01") == "a b ");
}

TEST_CASE("merge_report appends rejections before upstream's flush") {
    std::string up = pkt("unpack ok\n") + pkt("ok refs/heads/f3\n") + "0000";
    auto m = merge_report(up, {{"refs/heads/main", false, "Control Center policy: no"}});
    REQUIRE(m);
    CHECK(*m == pkt("unpack ok\n") + pkt("ok refs/heads/f3\n") + pkt("ng refs/heads/main Control Center policy: no\n") + "0000");
    CHECK(!merge_report(pkt("unpack ok\n"), {}));
}

TEST_CASE("SidebandDemux relays progress at once and collects band 1") {
    SidebandDemux d;
    std::string stream = sideband(2, "progress\n") + sideband(1, "000eunpack ok\n") + sideband(1, "0000") + "0000";
    std::string relayed;
    for (std::size_t i = 0; i < stream.size(); i += 3) {
        auto r = d.feed(stream.substr(i, 3));
        REQUIRE(r);
        relayed += *r;
    }
    CHECK(relayed == sideband(2, "progress\n"));
    CHECK(d.band1() == "000eunpack ok\n0000");
    CHECK(d.saw_flush());
    SidebandDemux bad;
    CHECK(!bad.feed(pkt("\x07x")));
    std::string big(200000, 'y');
    CHECK(sideband(1, big).size() == big.size() + 4 * 5);  // 4 packets of 65516 bytes
}

TEST_CASE("advertisements: push-cert is stripped, synthetic and error forms parse") {
    std::string adv = pkt("# service=git-receive-pack\n") + "0000" +
                      pkt(A + " refs/heads/main" + std::string(1, '\0') + "report-status push-cert=1234-abc atomic\n") +
                      pkt(B + " refs/heads/f2\n") + "0000";
    auto f = filter_advertisement(adv);
    REQUIRE(f);
    CHECK(f->find("push-cert") == std::string::npos);
    CHECK(f->find("report-status atomic\n") != std::string::npos);
    CHECK(f->find(B + " refs/heads/f2\n") != std::string::npos);
    CHECK(!filter_advertisement("0010not an advert0000"));
    CHECK(filter_advertisement(synthetic_advertisement()));
    CHECK(error_advertisement("no").find("ERR no") != std::string::npos);
}

TEST_CASE("routes and repository names are normalised before the allowlist") {
    auto r = parse_route("/github.com/Acme/Demo.git/info/refs?service=git-receive-pack");
    CHECK(r.kind == Route::Kind::info_refs);
    CHECK(r.service == "git-receive-pack");
    CHECK(r.repo_key == "github.com/acme/demo");
    CHECK(parse_route("/acme/demo/git-receive-pack").kind == Route::Kind::receive_pack);
    CHECK(parse_route("/acme/demo.git/git-upload-pack").kind == Route::Kind::upload_pack);
    CHECK(parse_route("/acme/../etc/git-receive-pack").kind == Route::Kind::other);
    CHECK(parse_route("/acme/d%2e/git-receive-pack").kind == Route::Kind::other);
    CHECK(parse_route("/github.com/acme/git-receive-pack").kind == Route::Kind::other);
    for (const char* s : {"acme/demo", "Acme/Demo.git", "github.com/acme/demo/", "https://github.com/ACME/demo.git",
                          "git@github.com:acme/demo.git", "ssh://git@github.com/acme/demo"}) {
        auto n = normalise_repo(s);
        INFO(s);
        REQUIRE(n);
        CHECK(*n == "github.com/acme/demo");
    }
    CHECK(!normalise_repo("acme"));
    CHECK(!normalise_repo("a/b/c"));
}

TEST_CASE("git_config_text rewrites the three GitHub push spellings and bypasses proxies") {
    std::string t = git_config_text("http://127.0.0.1:9/");
    CHECK(t.find("[url \"http://127.0.0.1:9/github.com/\"]") != std::string::npos);
    for (const auto& p : github_push_prefixes()) CHECK(t.find("pushInsteadOf = " + p + "\n") != std::string::npos);
    CHECK(t.find("[http \"http://127.0.0.1:9/\"]\n\tproxy = \"\"") != std::string::npos);
}

TEST_CASE("HTTP heads: parsed, limits enforced, double framing refused") {
    std::string buf = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nConnection: close\r\n\r\n0000";
    auto h = http::take_head(buf);
    REQUIRE(h);
    REQUIRE(*h);
    CHECK((*h)->method == "POST");
    CHECK(!(*h)->keep_alive());
    CHECK(buf == "0000");
    std::string partial = "GET / HTTP/1.1\r\nHost";
    auto p = http::take_head(partial);
    REQUIRE(p);
    CHECK(!*p);
    std::string both = "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
    CHECK(!http::take_head(both));
    std::string huge = "GET / HTTP/1.1\r\nX: " + std::string(70000, 'a');
    CHECK(!http::take_head(huge));
    CHECK(!http::parse_content_length("-1"));
    CHECK(*http::parse_content_length("42") == 42);
}

TEST_CASE("ChunkedDecoder decodes across slices and refuses bad framing") {
    std::string wire = "4;ext=1\r\n0000\r\n1a\r\n" + std::string(26, 'z') + "\r\n0\r\nX-T: 1\r\n\r\n";
    http::ChunkedDecoder d;
    std::string out;
    for (char c : wire) {
        auto r = d.decode(std::string_view(&c, 1), out, 1000);
        REQUIRE(r);
    }
    CHECK(d.done());
    CHECK(out == "0000" + std::string(26, 'z'));
    http::ChunkedDecoder bad;
    std::string o2;
    CHECK(!bad.decode("zz\r\n", o2, 100));
    http::ChunkedDecoder nocrlf;
    CHECK(!nocrlf.decode("1\r\nab", o2, 100));
    // The same state machine as cc-egress's (lib/cc/http): only CRLF ends a
    // size, data or trailer line; a control byte in an extension is refused.
    for (std::string bad_wire : {"4\n0000\r\n0\r\n\r\n", "4;x\n0000\r\n0\r\n\r\n", "4\r\n0000\n0\r\n\r\n",
                                 "0\r\nX-T: 1\n\r\n", "4;a\x01b\r\n0000\r\n0\r\n\r\n"}) {
        http::ChunkedDecoder d2;
        std::string o3;
        CAPTURE(bad_wire);
        CHECK(!d2.decode(bad_wire, o3, 100));
    }
    // The cap holds: at most `cap` payload bytes per call, the rest on the next.
    http::ChunkedDecoder capped;
    std::string o4;
    std::string_view in = "a\r\n0123456789\r\n0\r\n\r\n";
    auto used = capped.decode(in, o4, 4);
    REQUIRE(used);
    CHECK(o4 == "0123");
    auto rest = capped.decode(in.substr(*used), o4, 100);
    REQUIRE(rest);
    CHECK(o4 == "0123456789");
    CHECK(capped.done());
}

TEST_CASE("HTTP heads: the shared reader's rules hold for the gateway") {
    std::string cr = "POST /a HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n";
    CHECK(!http::take_head(cr));  // a bare CR inside a field value
    std::string fold = "POST /a HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n";
    CHECK(!http::take_head(fold));
    std::string absolute = "POST http://x/a HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(!http::take_head(absolute));  // the gateway serves paths only
    std::string big = "GET / HTTP/1.1\r\nX: " + std::string(cc::http::max_head, 'a') + "\r\n\r\n";
    CHECK(!http::take_head(big));
    std::string lead = "\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
    auto h = http::take_head(lead);
    REQUIRE(h);
    REQUIRE(*h);
    CHECK((*h)->target == "/b");
    CHECK((*h)->header("host") == std::optional<std::string>("x"));
}

TEST_CASE("the App JWT is RS256 over header.claims and verifies with the public key") {
    EVP_PKEY* key = EVP_RSA_gen(2048);
    REQUIRE(key);
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    long len = BIO_get_mem_data(bio, &data);
    std::string pem(data, static_cast<std::size_t>(len));
    BIO_free(bio);
    auto jwt = make_app_jwt(pem, "12345", 1700000000);
    REQUIRE(jwt);
    auto d1 = jwt->find('.'), d2 = jwt->rfind('.');
    CHECK(jwt->substr(0, d1) == base64url(R"({"alg":"RS256","typ":"JWT"})"));
    CHECK(jwt->substr(d1 + 1, d2 - d1 - 1) == base64url(R"({"exp":1700000540,"iat":1699999940,"iss":"12345"})"));
    // Decode the signature and verify it.
    std::string sig_b64 = jwt->substr(d2 + 1);
    std::string std_b64 = sig_b64;
    for (char& c : std_b64) c = c == '-' ? '+' : c == '_' ? '/' : c;
    while (std_b64.size() % 4) std_b64.push_back('=');
    std::string sig(std_b64.size(), '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(sig.data()),
                            reinterpret_cast<const unsigned char*>(std_b64.data()), static_cast<int>(std_b64.size()));
    REQUIRE(n > 0);
    sig.resize(256);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    std::string input = jwt->substr(0, d2);
    REQUIRE(EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1);
    CHECK(EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                           reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1);
    input[5] ^= 1;
    REQUIRE(EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1);
    CHECK(EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                           reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    CHECK(!make_app_jwt("not a key", "1", 0));
    CHECK(base64url("f") == "Zg");
    CHECK(base64url("fo") == "Zm8");
    CHECK(base64url("foo") == "Zm9v");
}

TEST_CASE("tokens that could break a header are refused") {
    CHECK(check_token("ghs_abc", "t"));
    CHECK(!check_token("", "t"));
    CHECK(!check_token("a b", "t"));
    CHECK(!check_token("a\r\nX: y", "t"));
}

namespace {
// A work repo with `n` commits of similar text (so pack-objects deltifies
// some of them), and the pack of `revs` that git itself writes.
struct PackRepo {
    std::string dir;
    cc::test::RunResult git(const std::vector<std::string>& args, const std::string& input = "") const {
        std::vector<std::string> argv{"git", "-C", dir};
        argv.insert(argv.end(), args.begin(), args.end());
        cc::test::RunOptions o;
        o.input = input;
        o.env = {{"GIT_CONFIG_NOSYSTEM", "1"},       {"GIT_CONFIG_GLOBAL", "/dev/null"},
                 {"GIT_AUTHOR_NAME", "t"},           {"GIT_AUTHOR_EMAIL", "t@example.invalid"},
                 {"GIT_COMMITTER_NAME", "t"},        {"GIT_COMMITTER_EMAIL", "t@example.invalid"}};
        return cc::test::run(argv, o);
    }
    explicit PackRepo(const std::string& name, int n) : dir(cc::test::scratch_dir() + "/" + name) {
        REQUIRE(cc::test::run({"git", "init", "-q", dir}).status == 0);
        std::string text;
        for (int i = 0; i < n; ++i) {
            text += "line " + std::to_string(i) + " of a file that grows a little with every commit\n";
            std::ofstream(dir + "/f.txt") << text;
            REQUIRE(git({"add", "f.txt"}).status == 0);
            std::string msg = "commit " + std::to_string(i) + "\n\n" + std::string(400, 'm') + " body of a long message " + std::to_string(i);
            REQUIRE(git({"commit", "-q", "-m", msg}).status == 0);
        }
    }
    std::string pack(const std::string& revs, bool thin, bool ofs = true) const {
        std::vector<std::string> a{"pack-objects", "--stdout", "--revs", "--window=50", "--depth=50"};
        if (thin) a.push_back("--thin");
        if (ofs) a.push_back("--delta-base-offset");
        auto r = git(a, revs);
        REQUIRE(r.status == 0);
        return r.out;
    }
    std::vector<std::string> commits(const std::string& range) const {
        auto r = git({"rev-list", range});
        std::vector<std::string> out;
        std::istringstream in(r.out);
        for (std::string l; std::getline(in, l);) out.push_back(l);
        std::sort(out.begin(), out.end());
        return out;
    }
};

std::vector<std::string> oids_of(const std::vector<PackObject>& objects) {
    std::vector<std::string> out;
    for (const auto& o : objects) {
        std::string hdr = (o.type == 1 ? "commit " : "tag ") + std::to_string(o.data.size());
        hdr.push_back('\0');
        hdr += o.data;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        EVP_Digest(hdr.data(), hdr.size(), md, &n, EVP_sha1(), nullptr);
        char buf[3];
        std::string h;
        for (unsigned i = 0; i < n; ++i) {
            std::snprintf(buf, sizeof buf, "%02x", md[i]);
            h += buf;
        }
        out.push_back(h);
    }
    std::sort(out.begin(), out.end());
    return out;
}
}  // namespace

TEST_CASE("pack scanner: every commit of a real pack, fed whole or a byte at a time, deltas applied") {
    if (!cc::test::have_program("git")) CC_SKIP("needs git");
    PackRepo repo("scan-all", 40);
    auto none = [](const std::vector<std::string>&) { return std::map<std::string, PackObject>(); };
    std::string pack = repo.pack("HEAD\n", false);
    PackScanner whole;
    REQUIRE(whole.feed(pack));
    REQUIRE(whole.finish());
    CHECK(whole.entries() == 120);  // 40 commits, trees and blobs
    CHECK(oids_of(whole.objects()) == repo.commits("HEAD"));  // deltas on an earlier offset, applied as they come
    CHECK(!whole.incomplete());
    PackScanner bytewise;
    for (char c : pack) REQUIRE(bytewise.feed(std::string_view(&c, 1)));
    REQUIRE(bytewise.finish());
    CHECK(oids_of(bytewise.objects()) == repo.commits("HEAD"));
    // Deltas naming their base by id (no ofs-delta): resolved at the end.
    PackScanner by_id;
    REQUIRE(by_id.feed(repo.pack("HEAD\n", false, false)));
    REQUIRE(by_id.finish());
    CHECK(by_id.objects().size() < 40);
    CHECK(by_id.unresolved() > 0);
    by_id.resolve(none);
    CHECK(oids_of(by_id.objects()) == repo.commits("HEAD"));
    CHECK(by_id.unresolved() == 39);  // the file's deltas: their bases (blobs) are never kept

    // The commits of a pack rebuilt from the kept objects are what git reads back.
    PackRepo into("scan-into", 0);
    auto idx = into.git({"index-pack", "--stdin"}, commit_pack(whole.objects()));
    INFO(idx.err);
    CHECK(idx.status == 0);
    CHECK(into.git({"cat-file", "-t", repo.commits("HEAD").front()}).out == "commit\n");
}

TEST_CASE("pack scanner: a thin pack's deltas on bases outside it are resolved through the lookup") {
    if (!cc::test::have_program("git")) CC_SKIP("needs git");
    PackRepo repo("scan-thin", 30);
    std::string pack = repo.pack("HEAD\n^HEAD~5\n", true);
    PackScanner s;
    REQUIRE(s.feed(pack));
    REQUIRE(s.finish());
    s.resolve([&](const std::vector<std::string>& oids) {
        std::map<std::string, PackObject> found;
        for (const auto& oid : oids) {
            auto t = repo.git({"cat-file", "-t", oid});
            if (t.status != 0) continue;
            found[oid] = t.out != "commit\n" ? PackObject{2, {}} : PackObject{1, repo.git({"cat-file", "commit", oid}).out};
        }
        return found;
    });
    CHECK(oids_of(s.objects()) == repo.commits("HEAD~5..HEAD"));
}

TEST_CASE("pack scanner: a cut pack, bytes after the trailer and a wrong size are errors") {
    if (!cc::test::have_program("git")) CC_SKIP("needs git");
    PackRepo repo("scan-bad", 3);
    std::string pack = repo.pack("HEAD\n", false);
    PackScanner cut;
    REQUIRE(cut.feed(pack.substr(0, pack.size() - 30)));
    auto f = cut.finish();
    REQUIRE(!f);
    CHECK(f.error().one_line().find("ends early") != std::string::npos);
    PackScanner extra;
    auto e = extra.feed(pack + "x");
    REQUIRE(!e);
    CHECK(e.error().one_line().find("has bytes after its trailer") != std::string::npos);
    PackScanner magic;
    auto m = magic.feed("PACX" + pack.substr(4));
    REQUIRE(!m);
    CHECK(m.error().one_line().find("does not start with PACK") != std::string::npos);
    // The first entry's size one larger than its data: an error, as index-pack says.
    std::string grown = pack;
    unsigned char& b = reinterpret_cast<unsigned char&>(grown[12]);
    b = static_cast<unsigned char>((b & 0xf0) | (((b & 15) + 1) & 15));
    PackScanner size;
    auto sz = size.feed(grown);
    REQUIRE(!sz);
    CHECK(sz.error().one_line().find("inflates") != std::string::npos);
}

namespace {

// A pack of a 64 KiB commit and `n` deltas on it, each a kilobyte of copy
// instructions (one byte copies 64 KiB) that makes 64 MiB: a few kilobytes
// of push that expand past anything a gateway should hold.
std::string expanding_pack(int n, bool by_id = false) {
    std::string p = "PACK";
    auto put32 = [&](std::uint32_t v) {
        for (int sh = 24; sh >= 0; sh -= 8) p.push_back(static_cast<char>((v >> sh) & 0xff));
    };
    put32(2);
    put32(static_cast<std::uint32_t>(n + 1));
    std::string base_id;  // the commit's id (20 bytes), for deltas naming it
    auto entry = [&](int type, const std::string& data, std::uint64_t ofs) {
        p += pack_entry_header(type, data.size());
        if (type == 6) {  // git's offset encoding
            unsigned char buf[16];
            int pos = 15;
            buf[pos] = ofs & 127;
            while (ofs >>= 7) buf[--pos] = static_cast<unsigned char>(128 | (--ofs & 127));
            p.append(reinterpret_cast<char*>(buf + pos), static_cast<std::size_t>(16 - pos));
        } else if (type == 7) {
            p += base_id;
        }
        uLongf len = compressBound(static_cast<uLong>(data.size()));
        std::string z(len, '\0');
        compress2(reinterpret_cast<Bytef*>(z.data()), &len, reinterpret_cast<const Bytef*>(data.data()),
                  static_cast<uLong>(data.size()), 9);
        p.append(z.data(), len);
    };
    const std::uint64_t base_at = p.size();
    const std::string commit = "tree " + std::string(40, '0') + "\n" + std::string(65536 - 46, 'x');
    {
        std::string obj = "commit " + std::to_string(commit.size()) + std::string(1, '\0') + commit;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdn = 0;
        EVP_Digest(obj.data(), obj.size(), md, &mdn, EVP_sha1(), nullptr);
        base_id.assign(reinterpret_cast<char*>(md), mdn);
    }
    entry(1, commit, 0);
    std::string delta;
    for (std::uint64_t v : {std::uint64_t{65536}, std::uint64_t{64} << 20})
        for (; ; v >>= 7) {
            if (v < 0x80) { delta.push_back(static_cast<char>(v)); break; }
            delta.push_back(static_cast<char>(0x80 | (v & 0x7f)));
        }
    delta.append(1024, '\x80');  // copy 64 KiB from offset 0, 1024 times
    for (int i = 0; i < n; ++i) entry(by_id ? 7 : 6, delta, p.size() - base_at);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdn = 0;
    EVP_Digest(p.data(), p.size(), md, &mdn, EVP_sha1(), nullptr);
    p.append(reinterpret_cast<char*>(md), mdn);
    return p;
}

}  // namespace

// The cap on what a checked push's commits may hold is the memory the scan
// really takes: a delta's result is counted before it is made. Measured as
// the peak RSS of a child process that scans the pack.
TEST_CASE("pack scanner: deltas that expand a few kilobytes to hundreds of MiB stay under the cap") {
    // The delta itself is well formed: under a cap that allows it, it makes 64 MiB.
    {
        PackScanner roomy(80u << 20);
        REQUIRE(roomy.feed(expanding_pack(1)));
        REQUIRE(roomy.finish());
        REQUIRE(roomy.objects().size() == 2);
        CHECK(roomy.objects()[1].data.size() == std::size_t{64} << 20);
        CHECK(!roomy.incomplete());
    }
    // Deltas on an earlier entry are applied as they come; deltas naming
    // their base by id wait and are applied at the end.
    const bool by_id = GENERATE(false, true);
    INFO((by_id ? "by id" : "by offset"));
    const std::string pack = expanding_pack(7, by_id);
    CHECK(pack.size() < 64 * 1024);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        PackScanner s;
        auto f = s.feed(pack);
        auto g = f ? s.finish() : f;
        if (g) s.resolve([](const std::vector<std::string>&) { return std::map<std::string, PackObject>(); });
        std::string said = !g ? "error: " + g.error().one_line()
                              : std::to_string(s.objects().size()) + " kept; " + s.incomplete_reason();
        ssize_t w = ::write(fds[1], said.data(), said.size());
        (void)w;
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string said;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int st = 0;
    rusage ru{};
    REQUIRE(::wait4(pid, &st, 0, &ru) == pid);
    CHECK(WIFEXITED(st));
    CHECK(said == "1 kept; the pack's commits are over the 16 MiB the check holds");
    INFO("child peak RSS " << ru.ru_maxrss << " KiB");
    CHECK(ru.ru_maxrss < 48 * 1024);
}

TEST_CASE("apply_delta copies and inserts, and refuses a delta for another base") {
    // base size 5, result size 8: copy 0..5 ("hello"), insert "!!!"
    std::string d = std::string("\x05\x08", 2) + std::string("\x91\x00\x05", 3) + "\x03!!!";
    CHECK(apply_delta("hello", d) == std::optional<std::string>("hello!!!"));
    CHECK(!apply_delta("hell", d));
    CHECK(!apply_delta("hello", d.substr(0, d.size() - 1)));
}

// A gateway killed mid-push leaves its quarantine (tens of MiB) in the
// mirror. The next gateway, and each push, removes those nobody holds: the
// lock a quarantine's gateway holds ends with its process, however it ends.
TEST_CASE("quarantines: a killed gateway's quarantine is swept, a living one is not", "[git][quarantine]") {
    namespace fs = std::filesystem;
    std::string mirrors = cc::test::scratch_dir() + "/sweep-mirrors";
    std::string objects = mirrors + "/github.com/acme/demo.git/objects";
    fs::create_directories(objects + "/incoming-dead/pack");
    fs::create_directories(objects + "/incoming-live/pack");
    fs::create_directories(objects + "/pack");
    std::ofstream(objects + "/incoming-dead/pack/big.pack") << std::string(4096, 'x');
    // Each held by a process of its own, as a gateway holds it.
    pid_t dead = cc::test::hold_flock(objects + "/incoming-dead/.lock");
    pid_t live = cc::test::hold_flock(objects + "/incoming-live/.lock");
    REQUIRE(dead > 0);
    REQUIRE(live > 0);
    // While both gateways live, nothing is swept.
    CHECK(sweep_all_quarantines(mirrors) == 0);
    CHECK(fs::exists(objects + "/incoming-dead"));
    REQUIRE(::kill(dead, SIGKILL) == 0);
    REQUIRE(::waitpid(dead, nullptr, 0) == dead);
    CHECK(sweep_all_quarantines(mirrors) == 1);
    CHECK_FALSE(fs::exists(objects + "/incoming-dead"));
    CHECK(fs::exists(objects + "/incoming-live/.lock"));
    CHECK(fs::exists(objects + "/pack"));  // the mirror's own packs are never touched
    ::kill(live, SIGKILL);
    ::waitpid(live, nullptr, 0);
    CHECK(sweep_quarantines(objects) == 1);
    CHECK_FALSE(fs::exists(objects + "/incoming-live"));
}
