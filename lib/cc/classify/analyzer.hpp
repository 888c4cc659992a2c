// Private to lib/cc/classify: the analyzer that turns simple commands into
// action classes, shared by the files that hold its handlers (one per family
// of tools). Not installed; nothing outside classify includes it.
#pragma once

#include <algorithm>
#include <cctype>
#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "cc/classify/classify.hpp"
#include "cc/classify/expansions.hpp"
#include "cc/classify/knowledge.hpp"
#include "cc/shell/parser.hpp"

namespace cc::classify::detail {

using shell::Kind;
using shell::Node;
using shell::Word;
using sv = std::string_view;

constexpr sv kCommit = "create_commit", kPush = "push", kOpenPr = "open_pull_request",
             kReview = "publish_review_or_merge", kTracker = "write_external_tracker", kInstall = "install_package",
             kPublish = "publish_package", kNet = "network_access", kNetWrite = "network_write",
             kWrite = "write_files", kRun = "run_code", kPriv = "privilege_escalation", kDestroy = "destroy_system",
             kDestroyWork = "destroy_work", kSystem = "change_system",
             kEscape = "namespace_escape", kUnparsable = "unparsable";

struct Arg {
    std::string text;
    bool dynamic = false;
};
using Args = std::vector<Arg>;

// Name tables are sorted at compile time: a look-up is a binary search, and
// nothing is built or allocated when the program starts (cc-classify runs
// once per agent command, so its start-up is part of every answer).
template <std::size_t N>
constexpr std::array<sv, N> sorted_names(const sv (&names)[N]) {
    std::array<sv, N> t{};
    std::copy(std::begin(names), std::end(names), t.begin());
    std::sort(t.begin(), t.end());
    return t;
}

template <std::size_t N>
constexpr bool contains(const std::array<sv, N>& t, sv name) {
    return std::binary_search(t.begin(), t.end(), name);
}

template <typename V>
struct Named {
    sv name;
    V value{};
};

// fill(set) calls set({"name", ...}, value) for each group; Fill is a
// captureless lambda, called once to count and once to fill.
template <typename V, typename Fill>
constexpr auto make_table(Fill fill) {
    constexpr std::size_t n = [] {
        std::size_t i = 0;
        Fill{}([&](std::initializer_list<sv> names, const V&) { i += names.size(); });
        return i;
    }();
    std::array<Named<V>, n> t{};
    std::size_t i = 0;
    fill([&](std::initializer_list<sv> names, const V& v) {
        for (sv name : names) t[i++] = {name, v};
    });
    std::sort(t.begin(), t.end(), [](const Named<V>& a, const Named<V>& b) { return a.name < b.name; });
    return t;
}

// A name is listed once: a second entry is either dead or a contradiction.
template <typename V, std::size_t N>
constexpr bool no_duplicates(const std::array<Named<V>, N>& t) {
    for (std::size_t i = 1; i < N; ++i)
        if (t[i].name == t[i - 1].name) return false;
    return true;
}

template <std::size_t N>
constexpr bool no_duplicates(const std::array<sv, N>& t) {
    for (std::size_t i = 1; i < N; ++i)
        if (t[i] == t[i - 1]) return false;
    return true;
}

template <typename V, std::size_t N>
constexpr const V* lookup(const std::array<Named<V>, N>& t, sv name) {
    auto it = std::lower_bound(t.begin(), t.end(), name, [](const Named<V>& e, sv k) { return e.name < k; });
    return it != t.end() && it->name == name ? &it->value : nullptr;
}

bool starts_with(sv s, sv p);
bool is_opt(const Arg& a);
sv basename(sv s);
bool system_program(sv path);
bool is_assignment_text(sv t);
std::size_t skip_opts(const Args& a, std::size_t from, sv sv_opts, std::initializer_list<sv> lv_opts);
bool has_flag(const Args& a, std::size_t from, std::size_t to, char short_flag, std::initializer_list<sv> longs);
std::optional<std::string> opt_value(const Args& a, std::size_t from, char short_opt, std::initializer_list<sv> longs, sv short_value_opts = "");
std::vector<std::size_t> positionals(const Args& a, std::size_t from, sv sv_opts, std::initializer_list<sv> lv_opts);
std::vector<std::size_t> positionals(const Args& a, std::size_t from, sv sv_opts, const std::vector<std::string>& lv_opts);

// --- paths that matter ------------------------------------------------------

std::string normalize_path(std::string p);
bool climbs(const std::string& raw);
bool is_precious(const std::string& raw);
bool is_system_file(const std::string& raw);
bool is_worktree(const std::string& raw);
bool is_rebuildable(const std::string& raw);
bool relative_tree(const std::string& raw);
bool runs_code_variable(sv assignment);
bool setuid_mode(const std::string& m);
bool is_block_device(sv p);
bool is_kernel_knob(sv p);
bool is_harmless_sink(sv p);

// --- the analyzer ------------------------------------------------------------

std::unordered_set<std::string> function_names(const Node& root);
// Literal values assigned to names anywhere in the line (see Values).
void collect_values(const Node& root, Values& out);

struct Ctx {
    std::optional<std::string> stdin_script;  // literal here-doc / here-string fed to the command
};

class Analyzer {
    friend struct ReaderTable;  // action_tables.cpp: reader names -> the private readers

public:
    std::vector<Finding> out;
    // Names of functions defined anywhere in the line: calling one runs its
    // body, which is judged where it is defined.
    const std::unordered_set<std::string>* functions = nullptr;
    // The line whose literal values (collect_values) the plausible readings
    // of a run-time command name use, and an enclosing line's (bash -c in a
    // line that sets them). Collected on first use: most lines have none.
    const Node* values_root = nullptr;
    const Values* outer_values = nullptr;
    const Values& line_values();
    // Fill Finding::resolved (for command rules): it copies every command's
    // words, so only when the policy has command rules.
    bool resolve = false;

    void node(const Node& n, int depth);

    // The built-in reader a data file names ("reader": "sudo"): its index, or -1.
    static int reader_index(sv name);

private:
    const Knowledge& known_ = knowledge();
    struct Call {
        const Args& a;
        std::size_t k;  // index of the command name in a
        Finding& f;
        const Ctx& ctx;
        int depth;
        std::size_t args_from() const { return k + 1; }
        sv name() const { return basename(a[k].text); }
    };
    using Handler = void (Analyzer::*)(Call&);

    void push(Finding f);
    static void add(Finding& f, sv cls, std::string note);
    void words(const std::vector<Word>& ws, int depth);
    void subs_of_redirect(const shell::Redirect& r, int depth);
    static void write_target(Finding& f, const std::string& path, bool dynamic, sv via);
    static void redirect(const shell::Redirect& r, Finding& f);
    void pipeline(const Node& n, int depth);
    static std::optional<std::string> literal_output(const Node& n);

    std::optional<std::string> piped_script_;

    void function(const Node& n, int depth);
    void simple(const Node& n, int depth);
    static bool expanded_reading(const std::vector<Word>& ws, Args& out);
    void reparse(const std::string& text, Finding& f, sv via, int depth);
    static bool asks_for_help(const Args& a, std::size_t k);
    void read_only_options(Call& c, const CommandEntry& e);
    void deferred_subscripts(const Node& n, Finding& f);
    void code_expansions(const Node& n, Finding& f);

    // Wrappers recurse (`nice nice ... git push`): bounded, so a long line of
    // them cannot exhaust the stack.
    int wrappers_ = 0;
    static constexpr int max_wrappers = 64;

    void command(const Args& a, std::size_t k, Finding& f, const Ctx& ctx, int depth);
    void string_readings(const std::string& text, Finding& f, sv via, int depth);
    void dynamic_readings(const Args& a, std::size_t k, Finding& f, const Ctx& ctx, int depth);
    bool in_reading_ = false;
    std::optional<Values> values_;
    void rest(Call& c, std::size_t from);
    void fetch_and_run(Call& c);

    // --- wrappers ---------------------------------------------------------

    void w_env(Call& c);
    void w_simple(Call& c);
    void w_command(Call& c);
    void w_exec(Call& c);
    void w_time(Call& c);
    void w_timeout(Call& c);
    void w_nice(Call& c);
    void w_ionice(Call& c);
    void w_stdbuf(Call& c);
    void w_setsid(Call& c);
    void w_taskset(Call& c);
    void w_chrt(Call& c);
    void w_flock(Call& c);
    void w_watch(Call& c);
    void w_xargs(Call& c);
    void w_sudo(Call& c);
    void w_doas(Call& c);
    void w_su(Call& c);
    void w_pkexec(Call& c);
    void w_shell(Call& c);
    void w_script(Call& c);
    void w_parallel(Call& c);
    void shell_string(Call& c, const Arg& arg, const std::string& via);
    void shell_string_text(Call& c, const std::string& text, const std::string& via);
    void join_and_reparse(Call& c, std::size_t from, sv via);
    void w_eval(Call& c);
    void w_trap(Call& c);
    void w_source(Call& c);
    void w_find(Call& c);
    static std::optional<std::string> precious_find_root(const Call& c);

    // --- files -------------------------------------------------------------

    void f_rm(Call& c);
    void f_write(Call& c);
    void f_chmod(Call& c);
    void f_dd(Call& c);
    void f_tee(Call& c);
    void f_sed(Call& c);
    void sed_script(Call& c, const std::string& t);
    void f_man(Call& c);
    void f_xxd(Call& c);
    void f_awk(Call& c);
    void f_sort(Call& c);
    void f_uniq(Call& c);
    void f_tar(Call& c);
    void f_unzip(Call& c);
    void f_compress(Call& c);
    void f_mktemp(Call& c);
    void f_yq(Call& c);
    void f_date(Call& c);
    void f_crontab(Call& c);
    void f_mount(Call& c);
    void f_sysctl(Call& c);
    void f_kill(Call& c);
    void f_power(Call& c);
    void f_init(Call& c);
    void f_systemctl(Call& c);
    void f_service(Call& c);
    void f_disk(Call& c);

    // --- network -------------------------------------------------------------

    void n_curl(Call& c);
    void n_wget(Call& c);
    void n_httpie(Call& c);
    void n_ssh(Call& c);
    void n_copy(Call& c);

    // --- git ---------------------------------------------------------------

    void git(Call& c);
    void git_sub(Call& c, std::size_t k, const std::string& sub);
    void git_destroys_work(Call& c, std::size_t from, const std::string& sub);
    void git_push(Call& c, std::size_t from);

    // --- gh ------------------------------------------------------------------

    void forge(Call& c);
    void gh(Call& c);

    // --- packages --------------------------------------------------------------

    void npm(Call& c);
    void yarn(Call& c);
    void bun(Call& c);
    void pip(Call& c, std::size_t from);
    void uv(Call& c);
    // A data entry's "subcommands" (no reader): the first word after the options -> its classes.
    void subcommand_tool(Call& c, const CommandEntry& e, std::size_t from = sv::npos);
    void p_conda(Call& c);
    void p_dpkg(Call& c);
    void p_rpm(Call& c);
    void p_pacman(Call& c);
    void p_nix(Call& c);
    void p_cargo(Call& c);
    void p_go(Call& c);
    void p_dotnet(Call& c);
    void p_build_publish(Call& c);
    void p_publisher(Call& c);
    void p_installer(Call& c);

    // --- interpreters and runners ----------------------------------------------

    void python(Call& c);
    void p_pip(Call& c);   // "reader": "pip" (pip, pip3, pip3.12, ...)
    // After a reader's special cases: the subcommand list of the command's
    // entry (by name, else prefix, else `family`'s), from `from` on.
    void listed_subcommands(Call& c, std::size_t from = sv::npos, sv family = {});
    void f_mkfs(Call& c);  // "reader": "mkfs" (mkfs, mkfs.ext4, ...)
    void interpreter(Call& c);
    void inline_code(Call& c, sv lang, const std::string& code);  // inline_code.cpp
    void docker(Call& c);
    void kubectl(Call& c);
    void cloud(Call& c);
    void ip(Call& c);
    void hostname(Call& c);
    void editor(Call& c);
    void escape(Call& c);
    void privilege(Call& c);
    static Handler reader(int index);
};

}  // namespace cc::classify::detail
