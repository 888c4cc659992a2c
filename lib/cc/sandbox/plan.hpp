// Parse, plan, execute: everything cc-wrap will do, decided before anything
// runs. build_plan() is a pure function of (spec, chosen backend, options,
// host paths), so `cc-wrap --print` and the unit tests see exactly the argv,
// environment, mounts, deny rules and proxy wiring a launch would use.
//
//   cc::sandbox::PlanInput in;  in.spec = *spec;  in.backend = choice.backend; ...
//   auto plan = cc::sandbox::build_plan(in, *cc::sandbox::real_paths());
//   if (!plan) -> plan.error(): input (exit 2) or unavailable (exit 125, names the rule)
//   std::cout << cc::json::write(cc::sandbox::to_json(*plan), 2);
//
// Linux native layout (bubblewrap): the new root is an empty tmpfs, made
// read-only at the end; system directories are bound read-only, /proc, /dev,
// /tmp and /run are private; then the spec's binds; then the deny overlays.
// bwrap applies mounts in order and a later mount over a path wins, so the
// mounts are ordered by depth of their destination (stable), overlays last.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/sandbox/env.hpp"
#include "cc/sandbox/microvm.hpp"
#include "cc/sandbox/paths.hpp"
#include "cc/sandbox/seccomp.hpp"
#include "cc/sandbox/write_rules.hpp"
#include "cc/spec/spec.hpp"

namespace cc::sandbox {

// dispatch: an agent run. terminal: a human's shell.
enum class Profile { dispatch, terminal };
std::string_view to_string(Profile p);

// Where the session's egress proxies are, as far as the launcher knows before
// planning (its own cc-egress is started with these paths; a handed-in one
// reports them in its ready line).
struct EgressWiring {
    enum class Source { none, own, handed };
    Source source = Source::none;
    std::string inbox;      // host path of the fd inbox socket; empty: none
    std::string httpUnix;   // host paths of the Unix sockets (socat bridge)
    std::string socksUnix;
    std::string http, socks;  // host TCP addresses (backend none / reporting)
    // Our own cc-egress only: the runtime copy of the operator's policy file
    // (empty: the default policy) and the approver command (empty: none, so
    // a host the policy marks ask is denied).
    std::string policy, approver;
    // TLS that cc-egress terminates for some hosts (its --intercept and
    // --credential). Our own cc-egress gets intercept, credentials and
    // upstreamCa; the sandbox gets the session CA (a bundle with the
    // system's roots) and each credential's placeholder, from the ready line
    // (own: read before the sandbox starts; handed: its --egress file).
    std::vector<std::string> intercept, credentials;
    std::vector<std::string> credentialFiles;  // host paths of the secrets: never visible inside
    std::vector<int> credentialFds;            // fd: sources, cc-wrap's close-on-exec copies (cc-egress gets 3, 4, ...)
    std::string upstreamCa;
    bool intercepting = false;
    std::string caPem;  // "" until the ready line is read
    std::vector<std::pair<std::string, std::string>> placeholders;  // NAME, placeholder ("" until read)
    // --capture: the command's TCP to any address on these ports goes to
    // cc-egress with its destination, and its DNS to cc-egress's name pool.
    bool capture = false;
    std::vector<std::uint16_t> capturePorts;
};

// Who the command is on the host. It is never uid 0 of the host: run by
// root, cc-wrap starts bubblewrap (and so the command) as an unprivileged
// uid/gid, which then creates the user namespace as any user's bubblewrap
// does. Run by a user, the command is that user (in a user namespace).
// The uid and gid a session's own id is shown as inside the sandbox.
constexpr unsigned k_sandbox_nobody = 65534;

struct Identity {
    bool userNamespace = true;  // the command runs in a user namespace of its own
    bool drop = false;          // cc-wrap (root) switches to uid/gid before starting the sandbox
    unsigned uid = 0, gid = 0;  // the command's uid/gid as the host sees them
    std::string why;
    // uid/gid are the session's own (unused_id): inside bubblewrap's user
    // namespace they are shown as nobody (65534), as the unmapped owners of
    // the host's files are, so tools that want a name or a matching owner
    // (git's safe.directory, whoami, ssh) work as they did under nobody.
    bool ownId = false;
};

// As root: --run-as UID[:GID], else the owner of the working directory's
// host path when that is not root, else a uid and gid of the session's own
// (HostPaths::unused_id, never nobody: nobody's other processes could trace
// the command). As a user: that user. uid or gid 0 is refused (exit 2).
Result<Identity> choose_identity(const spec::SandboxSpec& spec, const std::string& home, unsigned caller_uid,
                                 unsigned caller_gid, const std::optional<std::string>& run_as, const HostPaths& host);

struct PlanInput {
    spec::SandboxSpec spec;
    spec::Backend backend = spec::Backend::native;
    std::string backendLog;
    Profile profile = Profile::dispatch;
    std::vector<std::string> command;
    std::string home;                     // host $HOME
    Env hostEnv;
    bool inheritEnv = false;              // only with backend none
    std::vector<std::string> denyWrite;   // --deny-write PATTERN
    bool dropFilenameDenies = false;      // --drop-filename-denies
    std::string initExe;                  // cc-wrap-init (or cc-wrap), run inside as the init step
    std::string mechanism = "bubblewrap";  // or "seatbelt" (macOS)
    std::string bwrap = "/usr/bin/bwrap";
    std::string socat = "/usr/bin/socat";
    bool pty = false;                      // the child gets its own terminal
    std::string runtimeDir;               // cc-wrap's private dir for this launch
    EgressWiring egress;
    Identity identity;
    int landlockAbi = 0;                  // the kernel's (cc-probe); 0: no Landlock layer
    bool writeSupervisor = false;         // the kernel has seccomp user notification with ADDFD (cc-probe)
    bool writeSupervisorRefused = false;  // it has, but --no-write-supervisor
    std::optional<VmInput> vm;            // backend microvm: what resolve_vm() found (microvm.hpp)
};

// A bwrap mount option; to_string() gives it without dashes ("ro-bind",
// "remount-ro"), as argv and the plan's JSON spell it.
enum class MountOp { ro_bind, bind, dev_bind, tmpfs, symlink, proc, dev, dir, remount_ro };
std::string_view to_string(MountOp op);

struct Mount {
    MountOp op = MountOp::ro_bind;
    std::string src;   // host path (bind), link target (symlink), empty otherwise
    std::string dest;  // path inside the sandbox
    std::string why;
};

struct DenyRule {
    std::string kind;                    // "read" or "write"
    std::string rule;                    // as written ("~/.ssh", ".env", a protected path)
    std::string source;                  // "secrets", "mandatory", "protectedPaths", "--deny-write", "standard dispatch policy"
    bool glob = false;
    std::vector<std::string> spellings;  // literal, then symlink-resolved
    std::vector<std::string> enforcement;  // one line per spelling/visibility, e.g. "/w/.ssh: masked (empty mode-000 dir)"
};

// How the command reaches the proxies. fd_handover: listening sockets made
// inside the sandbox are handed to cc-egress (no copy hop); socat_bridge:
// socat inside copies loopback to the bound Unix sockets; host: shared host
// network (terminal); loopback: the proxies on the host's loopback (Seatbelt);
// none: no network wiring (backend none). to_string() gives the spelling of
// the JSON and of the init step's --transport ("fd-handover", ...).
enum class Transport { none, host, fd_handover, socat_bridge, loopback };
std::string_view to_string(Transport t);

struct ProxyWiring {
    Transport transport = Transport::none;
    int httpPort = 3128, socksPort = 1080;  // loopback ports inside the sandbox
    std::string egress;                     // "own", "handed" or ""
    std::string inbox;                      // fd-handover: cc-egress's inbox (host path, never bound inside)
    std::string policy, approver;           // own cc-egress: its --policy (runtime copy) and --approver
    std::string why;
    // cc-egress terminates TLS for some hosts: the session CA is in
    // guest_tls_dir (ca.pem, and bundle.pem with the system's roots).
    bool intercept = false;
    // --capture: every destination in the sandbox is local; each of these
    // ports has a listener handed to cc-egress, port 53 answers from its
    // name pool, and /etc/resolv.conf names 127.0.0.1.
    bool capture = false;
    std::vector<std::uint16_t> capturePorts;
};

struct Plan {
    spec::SandboxSpec spec;
    spec::Backend backend = spec::Backend::none;
    std::string backendLog;
    Profile profile = Profile::dispatch;
    std::vector<std::string> argv;     // what the launcher executes, argv[0] absolute
    Env env;                           // the child's whole environment
    std::vector<std::string> envRemoved;
    std::map<std::string, std::string> envRemovedWhy;  // name -> injection, proxy, credential, credential-url
    std::vector<std::string> envPassed;                // credentials kept by the spec's envPass
    bool inheritEnv = false;
    std::vector<Mount> mounts;
    std::vector<DenyRule> denies;
    std::vector<std::string> filenameDeniesDropped;
    ProxyWiring proxy;
    std::string runtimeDir;
    std::string chdir;
    std::vector<std::string> maskFiles;  // files the launcher creates in runtimeDir (mode 0)
    std::vector<std::string> notes;      // every weaker-than-asked choice, said out loud
    std::string seatbelt;                // the SBPL profile (macOS)
    // Is cc-wrap-init run inside before the command? It is needed for the
    // socat bridge, a --pty session, and to tell "not found" (127) from "not
    // executable" (126) when the plan cannot see the command inside;
    // otherwise bubblewrap execs the command itself (one exec fewer).
    bool initStep = true;
    std::string initWhy;
    Identity identity;
    // The layers in force, outermost first ("user-ns", "mount-ns", "pid-ns",
    // "net-ns", "seccomp"); `starting` and --print report them.
    std::vector<std::string> layers;
    std::optional<SeccompPolicy> seccomp;  // native backend: the filter bubblewrap installs
    // Landlock, applied by the init step inside: writes only beneath these.
    int landlockAbi = 0;
    std::vector<std::string> landlockWritable;
    // The write supervisor (supervisor.hpp): the rules it judges creating
    // and writing calls by. Set when the kernel offers it and some rule
    // applies inside a writable bind.
    std::optional<WriteRules> writeRules;
    // Backend microvm: the VM the host step starts inside the sandbox.
    std::optional<VmPlan> vm;
};

// Descriptor numbers bubblewrap is started with: 3 its JSON status, 4 the
// block fd (fd handover), 5 the seccomp program.
inline constexpr int bwrap_seccomp_fd = 5;
// With the write supervisor: 6 its BPF program, 7 the socket the init step
// sends the listener over (both passed through bubblewrap to the init step).
inline constexpr int write_filter_fd = 6;
inline constexpr int write_sock_fd = 7;

// Paths used inside the sandbox.
inline constexpr const char* guest_init = "/run/cc/init";
inline constexpr const char* guest_egress_dir = "/run/cc/egress";
inline constexpr const char* guest_tls_dir = "/run/cc/tls";

Result<Plan> build_plan(const PlanInput& in, const HostPaths& host);
// Backend microvm (microvm_plan.cpp); build_plan() calls it.
Result<Plan> build_microvm_plan(const PlanInput& in, const HostPaths& host);
nlohmann::json to_json(const Plan& p);
// The short form for the `starting` event.
nlohmann::json summary(const Plan& p);

// The deny sets, relative to $HOME ("~/..."), exposed for tests and docs.
const std::vector<std::string>& secret_read_denies();
const std::vector<std::string>& home_write_denies();
const std::vector<std::string>& standard_filename_denies();

}  // namespace cc::sandbox
