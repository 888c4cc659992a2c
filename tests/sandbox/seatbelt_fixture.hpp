// The fake macOS host and the session input the Seatbelt tests share: a
// host that models macOS's symlinks (/tmp, /var, /etc -> /private/...) and a
// chat-mode session with writable and read-only binds, own cc-egress ports
// 41001 (HTTP) and 41002 (SOCKS).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/seatbelt.hpp"

namespace seatbelt_fixture {

using namespace cc::sandbox;
using cc::spec::Backend;

class MacHost : public HostPaths {
public:
    std::set<std::string> dirs = {"/"};
    std::set<std::string> files;
    std::map<std::string, std::string> links = {
        {"/tmp", "private/tmp"}, {"/var", "private/var"}, {"/etc", "private/etc"}};

    MacHost() {
        for (const char* d : {"/System/Library", "/usr/bin", "/usr/local/bin", "/bin", "/sbin", "/private/etc/ssh",
                              "/private/tmp", "/private/var/folders/xy/T/cc-wrap.ABC123", "/private/var/db/timezone",
                              "/Users/u/.ssh", "/Volumes/data/aws"})
            dir(d);
        file("/private/etc/master.passwd");
        file("/private/etc/ssh/ssh_host_ed25519_key");
        file("/usr/local/bin/cc-wrap-init");
        file("/Users/u/.ssh/id_ed25519");
        file("/Users/u/.bashrc");
        links["/Users/u/.aws"] = "/Volumes/data/aws";  // a symlinked secret: both spellings
        const std::string cc = "/Users/u/cc/conv1";
        dir(cc + "/agents/a1/work/.git/hooks");
        file(cc + "/agents/a1/work/.git/config");
        dir(cc + "/agents/a2/work");  // a sibling agent
        dir(cc + "/repos/app/.git/hooks");
        dir(cc + "/repos/shared");    // read-only inside the writable repos bind
        dir(cc + "/repos/orig");      // a protected checkout inside a writable bind
        dir("/Users/u/cc/config/a1");
        dir("/Users/u/cc/state/a1");
        dir("/Users/u/repos/app");
        dir("/private/tmp/share");
    }
    void dir(const std::string& p) {
        for (std::string a = p; a != "/"; a = parent_of(a)) dirs.insert(a);
    }
    void file(const std::string& p) {
        dir(parent_of(p));
        files.insert(p);
    }
    std::optional<std::string> resolve(const std::string& path) const override {
        std::string out;
        std::istringstream in(path);
        std::string part;
        int hops = 0;
        while (std::getline(in, part, '/')) {
            if (part.empty()) continue;
            std::string next = out + "/" + part;
            for (auto l = links.find(next); l != links.end() && hops++ < 20; l = links.find(next))
                next = l->second[0] == '/' ? l->second : out + "/" + l->second;
            if (!dirs.count(next) && !files.count(next)) return std::nullopt;
            out = next;
        }
        return out.empty() ? "/" : out;
    }
    Kind kind(const std::string& path) const override {
        auto r = resolve(path);
        if (!r) return Kind::missing;
        return dirs.count(*r) ? Kind::dir : Kind::file;
    }
    std::optional<std::string> read_link(const std::string& path) const override {
        auto l = links.find(path);
        if (l == links.end()) return std::nullopt;
        return l->second;
    }
    std::vector<std::string> list(const std::string&) const override { return {}; }
    Exec executable(const std::string&) const override { return {}; }
};

inline const std::string k_cc = "/Users/u/cc/conv1";
inline const std::string k_work = k_cc + "/agents/a1/work";
inline const std::string k_repos = k_cc + "/repos";
inline const std::string k_rt = "/var/folders/xy/T/cc-wrap.ABC123";
inline const std::string k_tmp = "/private/var/folders/xy/T/cc-wrap.ABC123/tmp";  // as the kernel reports it

inline PlanInput mac_input() {
    PlanInput in;
    in.spec.sessionId = "s1";
    in.spec.workspaceId = "ws";
    in.spec.bindMounts = {
        {k_work, k_work, false},
        {"/Users/u/cc/config/a1", "/Users/u/cc/config/a1", true},
        {k_repos, k_repos, false},
        {k_repos + "/shared", k_repos + "/shared", true},
        {"/tmp/share", "/tmp/share", false},
    };
    in.spec.protectedPaths = {"/Users/u/repos/app", k_repos + "/orig"};
    in.spec.runnerStateDirs = {"/Users/u/cc/state/a1"};
    in.spec.guestWorkdir = k_work;
    in.backend = Backend::native;
    in.backendLog = "test";
    in.mechanism = "seatbelt";
    in.command = {"make", "test"};
    in.home = "/Users/u";
    in.hostEnv = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/Users/u"}, {"TMPDIR", "/var/folders/xy/T/"}};
    in.initExe = "/usr/local/bin/cc-wrap-init";
    in.runtimeDir = k_rt;
    in.egress.source = EgressWiring::Source::own;
    in.egress.http = "127.0.0.1:41001";
    in.egress.socks = "127.0.0.1:41002";
    return in;
}

inline std::string profile_of(const PlanInput& in) {
    MacHost h;
    return seatbelt_profile(in, h, 41001, 41002);
}

}  // namespace seatbelt_fixture
