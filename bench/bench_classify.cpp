// Classification throughput on a realistic corpus (the command lines of
// tests/classify/cases.tsv plus typical agent lines), parse-only cost, and the
// cost of a 1 MiB line. Target: 100,000 lines/s on one core.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cc/classify/classify.hpp"
#include "cc/shell/parser.hpp"
#include "cc/core/json_writer.hpp"

namespace {

std::vector<std::string> corpus() {
    static const std::vector<std::string> lines = [] {
        std::vector<std::string> out = {
            "git status", "git diff --stat", "ls -la", "cat package.json | jq .scripts",
            "npm test -- --watch=false", "git add -A && git commit -m 'wip' && git push origin feature/x",
            "grep -rn 'TODO' src/ | head -50", "cd web && npm ci && npm run build",
            "python3 -m pytest -x tests/ 2>&1 | tail -20", "find . -name '*.pyc' -delete",
            "cat > notes.md <<'EOF'\n# notes\n- item $(not run)\nEOF",
            "for f in src/*.ts; do npx prettier --check \"$f\"; done", "gh pr create --fill --base main",
            "curl -fsSL https://api.github.com/repos/o/r | jq '.stargazers_count'", "make -j4 && ./build/app --version",
        };
        const char* root = std::getenv("CC_ROOT");
        std::ifstream in(std::string(root ? root : ".") + "/tests/classify/cases.tsv");
        for (std::string row; std::getline(in, row);) {
            if (row.empty() || row[0] == '#') continue;
            auto tab = row.rfind('\t');
            if (tab != std::string::npos) out.push_back(row.substr(tab + 1));
        }
        return out;
    }();
    return lines;
}

void BM_ClassifyCorpus(benchmark::State& state) {
    auto lines = corpus();
    auto policy = cc::policy::default_policy();
    std::size_t i = 0, bytes = 0;
    for (auto _ : state) {
        const std::string& l = lines[i++ % lines.size()];
        auto r = cc::classify::classify(l, cc::policy::Mode::chat, policy);
        std::string out = cc::json::write(cc::classify::to_json(std::move(r)));  // what --jsonl writes
        benchmark::DoNotOptimize(out);
        bytes += l.size();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.SetLabel(std::to_string(lines.size()) + " distinct lines; items/s = lines/s");
}
BENCHMARK(BM_ClassifyCorpus);

// The same without building and printing the JSON result.
void BM_ClassifyOnly(benchmark::State& state) {
    auto lines = corpus();
    auto policy = cc::policy::default_policy();
    std::size_t i = 0;
    for (auto _ : state) {
        auto r = cc::classify::classify(lines[i++ % lines.size()], cc::policy::Mode::chat, policy);
        benchmark::DoNotOptimize(r);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ClassifyOnly);

void BM_ParseOnly(benchmark::State& state) {
    auto lines = corpus();
    std::size_t i = 0;
    for (auto _ : state) {
        auto s = cc::shell::parse(lines[i++ % lines.size()]);
        benchmark::DoNotOptimize(s);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ParseOnly);

void BM_OneMiBLine(benchmark::State& state) {
    std::string line;
    while (line.size() < (1u << 20)) line += "echo \"chunk $(date +%s)\" >> /tmp/out.log && ";
    line += "true";
    auto policy = cc::policy::default_policy();
    for (auto _ : state) {
        auto r = cc::classify::classify(line, cc::policy::Mode::chat, policy);
        benchmark::DoNotOptimize(r);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_OneMiBLine)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
