// The built-in readers that share/cc/classify/*.json names ("reader": "sudo"):
// code that reads a command's arguments the way the tool does. Which command
// names go to which reader, which only read and which always carry the same
// classes is data (knowledge.hpp); this table only names the code.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

struct ReaderTable {  // a friend of Analyzer: its readers are private
    struct ReaderName {
        sv name;
        Analyzer::Handler handler;
    };
    static constexpr auto build() {
        auto table = std::to_array<ReaderName>({
            {"env", &Analyzer::w_env},
            {"prefix", &Analyzer::w_simple},
            {"command", &Analyzer::w_command},
            {"exec", &Analyzer::w_exec},
            {"time", &Analyzer::w_time},
            {"timeout", &Analyzer::w_timeout},
            {"nice", &Analyzer::w_nice},
            {"ionice", &Analyzer::w_ionice},
            {"stdbuf", &Analyzer::w_stdbuf},
            {"setsid", &Analyzer::w_setsid},
            {"taskset", &Analyzer::w_taskset},
            {"chrt", &Analyzer::w_chrt},
            {"flock", &Analyzer::w_flock},
            {"watch", &Analyzer::w_watch},
            {"xargs", &Analyzer::w_xargs},
            {"sudo", &Analyzer::w_sudo},
            {"doas", &Analyzer::w_doas},
            {"su", &Analyzer::w_su},
            {"pkexec", &Analyzer::w_pkexec},
            {"shell", &Analyzer::w_shell},
            {"script", &Analyzer::w_script},
            {"parallel", &Analyzer::w_parallel},
            {"eval", &Analyzer::w_eval},
            {"trap", &Analyzer::w_trap},
            {"source", &Analyzer::w_source},
            {"find", &Analyzer::w_find},
            {"rm", &Analyzer::f_rm},
            {"file-writer", &Analyzer::f_write},
            {"chmod", &Analyzer::f_chmod},
            {"dd", &Analyzer::f_dd},
            {"tee", &Analyzer::f_tee},
            {"sed", &Analyzer::f_sed},
            {"man", &Analyzer::f_man},
            {"xxd", &Analyzer::f_xxd},
            {"awk", &Analyzer::f_awk},
            {"sort", &Analyzer::f_sort},
            {"uniq", &Analyzer::f_uniq},
            {"tar", &Analyzer::f_tar},
            {"unzip", &Analyzer::f_unzip},
            {"compressor", &Analyzer::f_compress},
            {"mktemp", &Analyzer::f_mktemp},
            {"yq", &Analyzer::f_yq},
            {"date", &Analyzer::f_date},
            {"crontab", &Analyzer::f_crontab},
            {"mount", &Analyzer::f_mount},
            {"sysctl", &Analyzer::f_sysctl},
            {"kill", &Analyzer::f_kill},
            {"power", &Analyzer::f_power},
            {"init", &Analyzer::f_init},
            {"systemctl", &Analyzer::f_systemctl},
            {"service", &Analyzer::f_service},
            {"disk", &Analyzer::f_disk},
            {"curl", &Analyzer::n_curl},
            {"wget", &Analyzer::n_wget},
            {"httpie", &Analyzer::n_httpie},
            {"ssh", &Analyzer::n_ssh},
            {"remote-copy", &Analyzer::n_copy},
            {"git", &Analyzer::git},
            {"gh", &Analyzer::gh},
            {"forge", &Analyzer::forge},
            {"npm", &Analyzer::npm},
            {"yarn", &Analyzer::yarn},
            {"bun", &Analyzer::bun},
            {"uv", &Analyzer::uv},
            {"conda", &Analyzer::p_conda},
            {"dpkg", &Analyzer::p_dpkg},
            {"rpm", &Analyzer::p_rpm},
            {"pacman", &Analyzer::p_pacman},
            {"nix", &Analyzer::p_nix},
            {"cargo", &Analyzer::p_cargo},
            {"go", &Analyzer::p_go},
            {"dotnet", &Analyzer::p_dotnet},
            {"build-tool", &Analyzer::p_build_publish},
            {"publisher", &Analyzer::p_publisher},
            {"toolchain-manager", &Analyzer::p_installer},
            {"interpreter", &Analyzer::interpreter},
            {"python", &Analyzer::python},
            {"pip", &Analyzer::p_pip},
            {"mkfs", &Analyzer::f_mkfs},
            {"docker", &Analyzer::docker},
            {"kubectl", &Analyzer::kubectl},
            {"cloud", &Analyzer::cloud},
            {"ip", &Analyzer::ip},
            {"hostname", &Analyzer::hostname},
            {"editor", &Analyzer::editor},
            {"namespace-escape", &Analyzer::escape},
            {"privilege", &Analyzer::privilege},
        });
        std::sort(table.begin(), table.end(), [](const ReaderName& a, const ReaderName& b) { return a.name < b.name; });
        return table;
    }
};

namespace {

using ReaderName = ReaderTable::ReaderName;
constexpr auto table = ReaderTable::build();
static_assert([] {
    for (std::size_t i = 1; i < table.size(); ++i)
        if (table[i].name == table[i - 1].name) return false;
    return true;
}());

}  // namespace

int Analyzer::reader_index(sv name) {
    auto it = std::lower_bound(table.begin(), table.end(), name, [](const ReaderName& e, sv k) { return e.name < k; });
    return it != table.end() && it->name == name ? static_cast<int>(it - table.begin()) : -1;
}

Analyzer::Handler Analyzer::reader(int index) { return table[static_cast<std::size_t>(index)].handler; }

int reader_index(sv name) { return Analyzer::reader_index(name); }

}  // namespace cc::classify::detail
