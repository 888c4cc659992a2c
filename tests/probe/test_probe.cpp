// The probe table on fake hosts, and cc-probe run for real here.
#include "harness.hpp"

#include <boost/process/search_path.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cc/probe/command.hpp"
#include "cc/probe/confinement.hpp"
#include "cc/probe/container_profile.hpp"
#include "cc/probe/diagnose.hpp"
#include "cc/probe/probe.hpp"

using namespace cc::probe;
using cc::spec::Backend;

namespace {

struct FakeHost : HostFacts {
    std::string kernel = "Linux";
    std::string release = "6.1.0-13-amd64";
    std::map<std::string, std::string> programs;  // name -> path
    std::map<std::string, std::string> files;
    bool kvm = false;

    std::string kernel_name() const override { return kernel; }
    std::string kernel_release() const override { return release; }
    std::optional<std::string> find_program(const std::string& n) const override {
        auto it = programs.find(n);
        if (it == programs.end()) return std::nullopt;
        return it->second;
    }
    std::optional<std::string> read_file(const std::string& p) const override {
        auto it = files.find(p);
        if (it == files.end()) return std::nullopt;
        return it->second;
    }
    bool kvm_usable(std::string& detail) const override {
        detail = kvm ? "fake kvm ok" : "/dev/kvm does not exist";
        return kvm;
    }
};

FakeHost linux_with(std::initializer_list<const char*> progs) {
    FakeHost h;
    for (const char* p : progs) h.programs[p] = std::string("/usr/bin/") + p;
    h.files["/etc/os-release"] = "ID=debian\nVERSION_ID=\"12\"\n";
    return h;
}

}  // namespace

TEST_CASE("linux with bwrap and socat: native available, sandbox ON line") {
    auto h = linux_with({"bwrap", "socat"});
    auto p = probe(h, SandboxSwitch{});
    CHECK(p.platform == "linux");
    CHECK(p.available);
    CHECK(p.mechanism == "bubblewrap");
    CHECK(p.backend == Backend::native);
    CHECK_FALSE(p.requiresInstall);
    CHECK(p.note == "namespace isolation, no kernel boundary");
    CHECK(p.line == "agent sandbox ON (bubblewrap: namespace isolation, no kernel boundary)");
}

TEST_CASE("linux missing socat, bwrap, or both: requiresInstall names the packages") {
    SECTION("no socat") {
        auto p = probe(linux_with({"bwrap"}), SandboxSwitch{});
        CHECK_FALSE(p.available);
        CHECK(p.requiresInstall);
        CHECK(p.missing == std::vector<std::string>{"socat"});
        CHECK(p.installHint == "sudo apt-get install socat");
        CHECK(p.backend == Backend::none);
        CHECK_THAT(p.line, Catch::StartsWith("no OS-native agent sandbox on this host"));
        CHECK_THAT(p.line, Catch::Contains("socat"));
    }
    SECTION("no bwrap") {
        auto p = probe(linux_with({"socat"}), SandboxSwitch{});
        CHECK(p.missing == std::vector<std::string>{"bubblewrap"});
        CHECK(p.installHint == "sudo apt-get install bubblewrap");
    }
    SECTION("neither, on Fedora") {
        auto h = linux_with({});
        h.files["/etc/os-release"] = "ID=fedora\n";
        auto p = probe(h, SandboxSwitch{});
        CHECK(p.missing == std::vector<std::string>{"bubblewrap", "socat"});
        CHECK(p.installHint == "sudo dnf install bubblewrap socat");
    }
    SECTION("arch, alpine, suse") {
        for (auto [id, cmd] : std::vector<std::pair<std::string, std::string>>{
                 {"arch", "sudo pacman -S socat"}, {"alpine", "sudo apk add socat"}, {"opensuse-leap\nID_LIKE=\"suse\"", "sudo zypper install socat"}}) {
            auto h = linux_with({"bwrap"});
            h.files["/etc/os-release"] = "ID=" + id + "\n";
            CHECK(probe(h, SandboxSwitch{}).installHint == cmd);
        }
    }
}

TEST_CASE("WSL2 is Linux; WSL1 is not offered") {
    auto h = linux_with({"bwrap", "socat"});
    h.release = "5.15.133.1-microsoft-standard-WSL2";
    auto p = probe(h, SandboxSwitch{});
    CHECK(p.platform == "wsl2");
    CHECK(p.wsl);
    CHECK(p.available);
    h.release = "4.4.0-19041-Microsoft";
    auto p1 = probe(h, SandboxSwitch{});
    CHECK(p1.platform == "wsl1");
    CHECK_FALSE(p1.available);
    CHECK_FALSE(p1.requiresInstall);
    CHECK_THAT(p1.note, Catch::Contains("native sandbox is not offered on this platform"));
}

TEST_CASE("macOS: Seatbelt via sandbox-exec") {
    FakeHost h;
    h.kernel = "Darwin";
    h.programs["sandbox-exec"] = "/usr/bin/sandbox-exec";
    auto p = probe(h, SandboxSwitch{});
    CHECK(p.platform == "macos");
    CHECK(p.available);
    CHECK(p.mechanism == "seatbelt");
    CHECK(p.line == "agent sandbox ON (seatbelt: namespace isolation, no kernel boundary)");
    CHECK_FALSE(p.microvm.available);
}

TEST_CASE("other platforms: unavailable, no install hint") {
    FakeHost h;
    h.kernel = "FreeBSD";
    h.programs["bwrap"] = "/usr/local/bin/bwrap";
    auto p = probe(h, SandboxSwitch{});
    CHECK(p.platform == "freebsd");
    CHECK_FALSE(p.available);
    CHECK_FALSE(p.requiresInstall);
    CHECK(p.note == "native sandbox is not offered on this platform");
    CHECK(p.line == "no OS-native agent sandbox on this host (native sandbox is not offered on this platform)");
}

TEST_CASE("the sandbox switch: flag beats env, only on/off, off is an opt-out") {
    CHECK(resolve_switch(std::nullopt, std::nullopt)->source == "default");
    CHECK(resolve_switch(std::nullopt, std::nullopt)->on);
    CHECK_FALSE(resolve_switch(std::nullopt, std::string("off"))->on);
    CHECK(resolve_switch(std::nullopt, std::string("off"))->source == "env");
    CHECK(resolve_switch(std::string("on"), std::string("off"))->on);
    CHECK(resolve_switch(std::string("on"), std::string("off"))->source == "flag");
    auto bad = resolve_switch(std::string("yes"), std::nullopt);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().one_line() == "--sandbox: must be 'on' or 'off', not 'yes'");
    auto badenv = resolve_switch(std::nullopt, std::string("maybe"));
    REQUIRE_FALSE(badenv);
    CHECK_THAT(badenv.error().one_line(), Catch::StartsWith("CC_SERVER_SANDBOX"));

    auto p = probe(linux_with({"bwrap", "socat"}), SandboxSwitch{false, "flag"});
    CHECK(p.line == "agent sandbox DISABLED by --sandbox off");
    CHECK(p.backend == Backend::none);
    CHECK(p.available);  // the host still offers it; the operator opted out
}

TEST_CASE("probe: stored backend names") {
    CHECK(cc::spec::parse_stored_backend(std::nullopt) == Backend::none);
    CHECK(cc::spec::parse_stored_backend(std::string("docker")) == Backend::native);
    CHECK(cc::spec::parse_stored_backend(std::string("native")) == Backend::native);
    CHECK(cc::spec::parse_stored_backend(std::string("microvm")) == Backend::microvm);
    CHECK(cc::spec::parse_stored_backend(std::string("firejail")) == Backend::none);
    CHECK(cc::spec::parse_stored_backend(std::string("")) == Backend::none);
}

TEST_CASE("probe: microvm never falls back silently, either way") {
    auto h = linux_with({"bwrap", "socat"});
    auto p = probe(h, SandboxSwitch{});
    SECTION("explicit microvm without KVM fails loudly") {
        auto c = choose_backend(p, Backend::microvm);
        REQUIRE_FALSE(c);
        CHECK(c.error().code == cc::Errc::unavailable);
        CHECK_THAT(c.error().one_line(), Catch::Contains("cannot boot a VM"));
    }
    SECTION("explicit microvm with KVM but no runtime fails loudly") {
        h.kvm = true;
        auto c = choose_backend(probe(h, SandboxSwitch{}), Backend::microvm);
        REQUIRE_FALSE(c);
        CHECK_THAT(c.error().one_line(), Catch::Contains("no VM runtime"));
    }
    SECTION("explicit microvm with KVM and a runtime gets microvm") {
        h.kvm = true;
        h.programs["firecracker"] = "/usr/bin/firecracker";
        auto c = choose_backend(probe(h, SandboxSwitch{}), Backend::microvm);
        REQUIRE(c);
        CHECK(c->backend == Backend::microvm);
    }
    SECTION("unspecified falls to native, and says so") {
        auto c = choose_backend(p, std::nullopt);
        REQUIRE(c);
        CHECK(c->backend == Backend::native);
        CHECK_FALSE(c->requested);
        CHECK_THAT(c->log, Catch::Contains("falling to native"));
    }
    SECTION("unspecified on a host without native runs none, and says so") {
        auto c = choose_backend(probe(linux_with({}), SandboxSwitch{}), std::nullopt);
        REQUIRE(c);
        CHECK(c->backend == Backend::none);
        CHECK_THAT(c->log, Catch::Contains("without a sandbox"));
    }
    SECTION("explicit native that the host cannot give is an error, never none") {
        auto c = choose_backend(probe(linux_with({"bwrap"}), SandboxSwitch{}), Backend::native);
        REQUIRE_FALSE(c);
        CHECK_THAT(c.error().one_line(), Catch::Contains("socat"));
    }
    SECTION("--sandbox off beats an unspecified backend") {
        auto c = choose_backend(probe(h, SandboxSwitch{false, "env"}), std::nullopt);
        REQUIRE(c);
        CHECK(c->backend == Backend::none);
        CHECK_THAT(c->log, Catch::Contains("DISABLED by CC_SERVER_SANDBOX=off"));
    }
}

TEST_CASE("probe JSON round-trips and rejects unknown fields") {
    auto h = linux_with({"bwrap"});
    auto p = probe(h, SandboxSwitch{});
    auto back = from_json(to_json(p));
    REQUIRE(back);
    CHECK(to_json(*back) == to_json(p));
    auto j = to_json(p);
    j["surprise"] = 1;
    auto bad = from_json(j);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().one_line() == "surprise: unknown field");
}

TEST_CASE("run_command in-process: --backend on a fake host") {
    auto h = linux_with({"bwrap", "socat"});
    std::ostringstream out, err;
    CommandOptions o;
    o.json = true;
    o.backend = "docker";
    CHECK(run_command(o, h, out, err) == 0);
    auto j = nlohmann::json::parse(out.str());
    CHECK(j["backendChoice"]["parsed"] == "native");
    CHECK(j["backendChoice"]["backend"] == "native");
    std::ostringstream out2, err2;
    o.backend = "microvm";
    CHECK(run_command(o, h, out2, err2) == 1);
    CHECK_THAT(err2.str(), Catch::Contains("cannot boot a VM"));
    CHECK(nlohmann::json::parse(out2.str())["backendChoice"]["backend"].is_null());
}

// ---- the real binary on this host ----

TEST_CASE("cc-probe here: plain line, JSON, and exit status") {
    auto plain = cc::test::run({cc::test::bin("cc-probe")});
    CHECK(plain.status == 0);
    CHECK(plain.err.empty());
    CHECK(std::count(plain.out.begin(), plain.out.end(), '\n') == 1);
    auto js = cc::test::run({cc::test::bin("cc-probe"), "--json"});
    REQUIRE(js.status == 0);
    auto j = nlohmann::json::parse(js.out);
    CHECK(j["platform"] == "linux");
    CHECK(j["line"].get<std::string>() + "\n" == plain.out);
    if (cc::test::have_program("bwrap") && cc::test::have_program("socat")) {
        CHECK(j["available"] == true);
        CHECK(plain.out == "agent sandbox ON (bubblewrap: namespace isolation, no kernel boundary)\n");
    }
}

TEST_CASE("cc-probe with a PATH that lacks socat names socat in the hint") {
    if (!cc::test::have_program("bwrap")) CC_SKIP("bwrap is not installed");
    std::string dir = cc::test::scratch_dir() + "/path-no-socat";
    std::filesystem::create_directories(dir);
    std::filesystem::create_symlink(boost::process::search_path("bwrap").string(), dir + "/bwrap");
    cc::test::RunOptions o;
    o.env["PATH"] = dir;
    auto r = cc::test::run({cc::test::bin("cc-probe"), "--json"}, o);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["available"] == false);
    CHECK(j["requiresInstall"] == true);
    CHECK(j["missing"] == nlohmann::json::array({"socat"}));
    CHECK_THAT(j["installHint"].get<std::string>(), Catch::EndsWith("install socat"));
    auto plain = cc::test::run({cc::test::bin("cc-probe")}, o);
    CHECK_THAT(plain.out, Catch::StartsWith("no OS-native agent sandbox on this host"));
    CHECK_THAT(plain.out, Catch::Contains("socat"));
    // An explicit native request on that host is refused, exit 1.
    auto nat = cc::test::run({cc::test::bin("cc-probe"), "--backend", "native"}, o);
    CHECK(nat.status == 1);
    CHECK_THAT(nat.err, Catch::Contains("socat"));
}

TEST_CASE("cc-probe --sandbox and CC_SERVER_SANDBOX") {
    cc::test::RunOptions env_off;
    env_off.env["CC_SERVER_SANDBOX"] = "off";
    auto r = cc::test::run({cc::test::bin("cc-probe")}, env_off);
    CHECK(r.status == 0);
    CHECK(r.out == "agent sandbox DISABLED by CC_SERVER_SANDBOX=off\n");
    auto flag = cc::test::run({cc::test::bin("cc-probe"), "--sandbox", "off"});
    CHECK(flag.out == "agent sandbox DISABLED by --sandbox off\n");
    auto beats = cc::test::run({cc::test::bin("cc-probe"), "--sandbox", "on", "--json"}, env_off);
    CHECK(nlohmann::json::parse(beats.out)["sandbox"]["source"] == "flag");
}

TEST_CASE("cc-probe bad input: one line on stderr, exit 2, nothing on stdout") {
    struct Case {
        std::vector<std::string> args;
        std::map<std::string, std::string> env;
        std::string expect;
    };
    std::vector<Case> cases = {
        {{"--frobnicate"}, {}, "--frobnicate"},
        {{"--sandbox", "maybe"}, {}, "--sandbox: must be 'on' or 'off', not 'maybe'"},
        {{}, {{"CC_SERVER_SANDBOX", "1"}}, "CC_SERVER_SANDBOX: must be 'on' or 'off'"},
        {{"--diagnose", "--data-dir", "/nonexistent/cc-dir"}, {}, "--data-dir '/nonexistent/cc-dir': cannot be read"},
        {{"--data-dir", "/tmp"}, {}, "only used with --diagnose"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{cc::test::bin("cc-probe")};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        cc::test::RunOptions o;
        o.env = c.env;
        auto r = cc::test::run(argv, o);
        INFO(c.expect);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK_THAT(r.err, Catch::Contains(c.expect));
    }
}

TEST_CASE("cc-probe --diagnose runs real checks") {
    if (std::getenv("CC_AS_USER")) REQUIRE(::geteuid() != 0);  // really unprivileged
    auto r = cc::test::run({cc::test::bin("cc-probe"), "--diagnose", "--json", "--data-dir", cc::test::scratch_dir()});
    REQUIRE((r.status == 0 || r.status == 1));
    auto j = nlohmann::json::parse(r.out);
    auto& checks = j["diagnostics"]["checks"];
    std::map<std::string, nlohmann::json> by;
    for (auto& c : checks) by[c["name"]] = c;
    for (auto name : {"userns", "bwrap", "socat", "landlock", "seccomp-notify", "capture", "reflink", "kvm", "vm-runtime"})
        CHECK(by.count(name) == 1);
    CHECK(by["capture"]["required"] == false);
    if (cc::test::have_program("bwrap") && cc::test::have_program("socat")) {
        // Where bwrap makes its namespaces, the capture self-test passes
        // too (root and nobody alike route every address to loopback in a
        // namespace of their own).
        CHECK(by["capture"]["status"] == "ok");
        // bwrap and socat are installed by `make deps`, and bwrap works on this host
        // as root and as nobody; a failure here is a real regression.
        CHECK(by["bwrap"]["status"] == "ok");
        CHECK(by["socat"]["status"] == "ok");
        CHECK(by["bwrap"]["required"] == true);
        CHECK(j["diagnostics"]["ok"] == true);
        CHECK(r.status == 0);
    }
    // Reflink on the scratch dir: tmpfs/ext4 say no, XFS/btrfs say yes; either way a real answer.
    CHECK((by["reflink"]["status"] == "ok" || by["reflink"]["status"] == "fail"));
    CHECK_THAT(by["userns"]["detail"].get<std::string>(), Catch::Contains("uid " + std::to_string(::getuid())));
    CHECK_FALSE(by["reflink"]["detail"].get<std::string>().empty());
}

TEST_CASE("cc-probe --diagnose as a user that cannot run bwrap reports the failing check") {
    std::string dir = cc::test::scratch_dir() + "/path-broken-bwrap";
    std::filesystem::create_directories(dir);
    // A bwrap that cannot make namespaces; socat stays real.
    std::string fake = dir + "/bwrap";
    {
        std::ofstream f(fake);
        f << "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n";
    }
    ::chmod(fake.c_str(), 0755);
    cc::test::RunOptions o;
    o.env["PATH"] = dir + ":/usr/bin:/bin";
    auto r = cc::test::run({cc::test::bin("cc-probe"), "--diagnose"}, o);
    if (!cc::test::have_program("socat")) CC_SKIP("socat is not installed");
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("FAIL  bwrap"));
    CHECK_THAT(r.out, Catch::Contains("setting up uid map"));
    CHECK_THAT(r.out, Catch::Contains("not usable on this host"));
}

TEST_CASE("cc-probe --json feeds cc-wrap --probe as written, layers included") {
    auto dir = cc::test::scratch_dir() + "/probe-chain";
    std::filesystem::create_directories(dir + "/work");
    auto probe = cc::test::run({cc::test::bin("cc-probe"), "--json"});
    REQUIRE(probe.status == 0);
    std::ofstream(dir + "/probe.json") << probe.out;
    auto j = nlohmann::json::parse(probe.out);
    REQUIRE(j.contains("backendChoice"));
    REQUIRE(j.contains("layers"));
    CHECK(j["layers"]["probed"] == true);
    CHECK(j["layers"]["seccomp"] == true);  // this machine's kernel
    std::ofstream(dir + "/spec.json") << R"({"sessionId":"s","workspaceId":"w","networkEnabled":false})";
    auto wrap = cc::test::run({cc::test::bin("cc-wrap"), "--probe", dir + "/probe.json", "--spec", dir + "/spec.json",
                               "--print", "--", "true"});
    INFO(wrap.err);
    CHECK(wrap.status == 0);
    CHECK(nlohmann::json::parse(wrap.out)["backend"] == "native");
}

// Inside a container the failing layer is named with the restriction that
// stops it and the setting that lifts it. The runtime's seccomp profile is
// reproduced around cc-probe (unshare and clone with CLONE_NEWUSER refused,
// as Docker's and Podman's default profiles refuse them without
// CAP_SYS_ADMIN), so this runs without a container runtime.
TEST_CASE("cc-probe --diagnose under a container's seccomp profile names it and the setting that lifts it") {
    const std::string filter = cc::test::bin("cc-test-container-seccomp");
    auto checks_of = [](const cc::test::RunResult& r) {
        std::map<std::string, nlohmann::json> by;
        const nlohmann::json doc = nlohmann::json::parse(r.out);
        for (const auto& c : doc["diagnostics"]["checks"]) by[c["name"].get<std::string>()] = c;
        return by;
    };
    // Without the filter a user namespace is made (this host allows it).
    auto free_run = cc::test::run({cc::test::bin("cc-probe"), "--diagnose", "--json"});
    auto free_checks = checks_of(free_run);
    REQUIRE(free_checks["userns"]["status"] == "ok");
    CHECK(free_checks.count("confinement") == 1);
    // Under it: refused, and said why.
    auto r = cc::test::run({filter, cc::test::bin("cc-probe"), "--diagnose", "--json"});
    INFO(r.out << r.err);
    CHECK(r.status == 1);
    auto by = checks_of(r);
    CHECK(by["userns"]["status"] == "fail");
    CHECK(by["userns"]["detail"] == "unshare(CLONE_NEWUSER) failed: Operation not permitted");
    const std::string hint = by["userns"]["hint"];
    // (This machine may itself look like a container: the runtime, when
    // one is found, is named first, and only its settings follow.)
    CHECK_THAT(hint, Catch::Contains("a seccomp filter (Seccomp: 2)"));
    CHECK_THAT(hint, Catch::Contains(" stops it: a seccomp profile that allows the sandbox's unshare, clone and mount: "
                                     "cc-probe --container-seccomp DEFAULT.json > cc-seccomp.json"));
    CHECK_THAT(hint, Catch::Contains("--security-opt seccomp=cc-seccomp.json") || Catch::Contains("localhostProfile: cc-seccomp.json"));
    CHECK_THAT(by["confinement"]["detail"].get<std::string>(), Catch::Contains("a seccomp filter (Seccomp: 2)"));
    CHECK(by["bwrap"]["status"] == "fail");
    CHECK_THAT(by["bwrap"]["hint"].get<std::string>(), Catch::Contains("--security-opt seccomp=cc-seccomp.json"));
}

// Docker's other restrictions, read from a prepared /proc: a masked /proc
// (what stops bubblewrap mounting a new one), its AppArmor profile, no
// CAP_SYS_ADMIN; and the runtime's own setting for each.
TEST_CASE("confinement: the runtime, masked /proc, AppArmor and capabilities are read, with each runtime's fix") {
    std::string root = cc::test::scratch_dir() + "/fake-container";
    std::filesystem::create_directories(root + "/proc/self/attr/apparmor");
    std::ofstream(root + "/.dockerenv") << "";
    std::ofstream(root + "/proc/self/status") << "Name:\tcc-probe\nSeccomp:\t2\nCapEff:\t00000000a80425fb\n";
    std::ofstream(root + "/proc/self/attr/apparmor/current") << "docker-default (enforce)\n";
    std::ofstream(root + "/proc/self/cgroup") << "0::/\n";
    std::ofstream(root + "/proc/self/mountinfo")
        << "600 550 0:60 / / rw,relatime - overlay overlay rw\n"
        << "601 600 0:63 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
        << "602 601 0:63 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
        << "603 601 0:64 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n"
        << "604 601 0:65 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw\n";
    auto c = cc::probe::read_confinement(root);
    CHECK(c.runtime == "docker");
    CHECK(c.seccomp);
    CHECK(c.apparmor == "docker-default (enforce)");
    CHECK_FALSE(c.cap_sys_admin);
    CHECK(c.proc_masked);
    CHECK(cc::probe::describe(c) ==
          "inside docker; a seccomp filter (Seccomp: 2); AppArmor profile docker-default (enforce); masked /proc "
          "(/proc/bus (read-only), /proc/acpi, /proc/kcore); no CAP_SYS_ADMIN");
    CHECK(cc::probe::container_fix(c, "proc") == "docker run --security-opt systempaths=unconfined (unmasks /proc)");
    std::string userns = cc::probe::container_fix(c, "userns");
    CHECK_THAT(userns, Catch::Contains("docker/podman run --security-opt seccomp=cc-seccomp.json"));
    CHECK(cc::probe::container_fix(c, "hostname") ==
          "a seccomp profile that allows the sandbox's sethostname: cc-probe --container-seccomp DEFAULT.json > "
          "cc-seccomp.json (DEFAULT.json: the runtime's default profile, /usr/share/containers/seccomp.json for "
          "Podman, moby's profiles/seccomp/default.json for Docker), then docker/podman run --security-opt "
          "seccomp=cc-seccomp.json");
    CHECK_THAT(userns, Catch::Contains("--security-opt apparmor=unconfined"));
    CHECK(userns.find("Kubernetes") == std::string::npos);  // docker's settings only
    c.runtime = "kubernetes";
    CHECK_THAT(cc::probe::container_fix(c, "proc"), Catch::Contains("procMount: Unmasked, which needs hostUsers: false"));
    // Outside any container nothing is said.
    cc::probe::Confinement none;
    CHECK(cc::probe::describe(none).empty());
    CHECK(cc::probe::container_fix(none, "userns").empty());
}

// A runtime's profile (the shape of Docker's and Podman's defaults): the
// sandbox's calls come out of every rule that conditions or refuses them and
// into one unconditional allow; everything else stays as it was.
TEST_CASE("container seccomp: the runtime's profile with only the sandbox's calls allowed") {
    auto base = nlohmann::json::parse(R"({
      "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
      "syscalls": [
        {"names": ["read", "write", "landlock_create_ruleset"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": 2114060288, "op": "SCMP_CMP_MASKED_EQ"}], "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
        {"names": ["bpf", "sethostname", "setns"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
        {"names": ["bpf", "sethostname", "setns"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
         "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
        {"name": "mount", "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
        {"name": "chroot", "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_CHROOT"]}}
      ]})");
    auto out = cc::probe::container_seccomp_profile(base);
    REQUIRE(out);
    const auto& rules = (*out)["syscalls"];
    CHECK((*out)["defaultAction"] == "SCMP_ACT_ERRNO");
    CHECK((*out)["defaultErrnoRet"] == 1);
    REQUIRE(rules.size() == 5);  // clone's and mount's own rules are gone, one is added
    CHECK(rules[0]["names"] == nlohmann::json({"read", "write"}));
    CHECK(rules[1]["names"] == nlohmann::json({"bpf"}));  // still only with CAP_SYS_ADMIN
    CHECK(rules[1]["includes"]["caps"] == nlohmann::json({"CAP_SYS_ADMIN"}));
    CHECK(rules[2]["names"] == nlohmann::json({"bpf"}));
    CHECK(rules[2]["action"] == "SCMP_ACT_ERRNO");
    CHECK(rules[3]["name"] == "chroot");
    CHECK(rules[4]["action"] == "SCMP_ACT_ALLOW");
    CHECK_FALSE(rules[4].contains("includes"));
    CHECK_FALSE(rules[4].contains("args"));
    CHECK(rules[4]["names"] == nlohmann::json(cc::probe::container_sandbox_calls()));
    CHECK(rules[4]["names"] == nlohmann::json({"clone", "unshare", "mount", "umount2", "pivot_root", "sethostname",
                                              "setns", "landlock_create_ruleset", "landlock_add_rule",
                                              "landlock_restrict_self"}));
    // Each sandbox call is named by exactly one rule: no runtime sees two
    // actions for one call.
    for (const auto& call : cc::probe::container_sandbox_calls()) {
        int n = 0;
        for (const auto& r : rules)
            if (r.contains("names") ? std::find(r["names"].begin(), r["names"].end(), call) != r["names"].end()
                                    : r["name"] == call)
                ++n;
        CHECK(n == 1);
    }

    // Not a profile: said, naming what is wrong.
    auto no_default = cc::probe::container_seccomp_profile(nlohmann::json::parse(R"({"syscalls": []})"));
    REQUIRE_FALSE(no_default);
    CHECK(no_default.error().one_line() ==
          "seccomp profile: no defaultAction: not a Docker or Podman seccomp profile");
    auto bad_names = cc::probe::container_seccomp_profile(
        nlohmann::json::parse(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": "clone"}]})"));
    REQUIRE_FALSE(bad_names);
    CHECK(bad_names.error().one_line() == "seccomp profile: syscalls[0].names is not an array");
    CHECK_FALSE(cc::probe::container_seccomp_profile(nlohmann::json::array()));
}

TEST_CASE("cc-probe --container-seccomp: the adapted profile on stdout, bad input exit 2") {
    std::string dir = cc::test::scratch_dir() + "/container-seccomp";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/base.json")
        << R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read", "sethostname"], "action": "SCMP_ACT_ALLOW"}]})";
    auto r = cc::test::run({cc::test::bin("cc-probe"), "--container-seccomp", dir + "/base.json"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["syscalls"][0]["names"] == nlohmann::json({"read"}));
    CHECK(j["syscalls"][1]["names"][5] == "sethostname");

    std::ofstream(dir + "/not.json") << R"({"defaultAction": "SCMP_ACT_ERRNO"})";
    auto bad = cc::test::run({cc::test::bin("cc-probe"), "--container-seccomp", dir + "/not.json"});
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err == "cc-probe: " + dir + "/not.json: seccomp profile: no syscalls list: not a Docker or Podman seccomp profile\n");
    auto missing = cc::test::run({cc::test::bin("cc-probe"), "--container-seccomp", dir + "/absent.json"});
    CHECK(missing.status == 2);
    CHECK(missing.out.empty());
    CHECK_THAT(missing.err, Catch::StartsWith("cc-probe: ") && Catch::Contains("absent.json"));
}
