// The pure parts of cc-wrap on the hot path: building a plan against this
// host's real paths (once per launch) and encoding --events chunks (once per
// 256 KiB of child output).
#include <benchmark/benchmark.h>

#include <string>

#include "cc/sandbox/events.hpp"
#include "cc/sandbox/plan.hpp"

namespace {

void BM_build_plan(benchmark::State& state) {
    auto host = cc::sandbox::real_paths();
    cc::sandbox::PlanInput in;
    in.spec.sessionId = "bench";
    in.spec.workspaceId = "ws";
    in.spec.bindMounts = {{"/tmp", "/tmp", false}, {"/usr/share", "/usr/share", true}};
    in.backend = cc::spec::Backend::native;
    in.command = {"true"};
    in.home = "/root";
    in.hostEnv = cc::sandbox::current_env();
    in.dropFilenameDenies = true;
    in.initExe = "/usr/bin/cc-wrap-init";
    in.runtimeDir = "/tmp/cc-wrap.bench";
    in.egress.source = cc::sandbox::EgressWiring::Source::own;
    in.egress.inbox = "/tmp/cc-wrap.bench/egress/inbox.sock";
    for (auto _ : state) {
        auto p = cc::sandbox::build_plan(in, *host);
        benchmark::DoNotOptimize(p);
    }
}
BENCHMARK(BM_build_plan)->Unit(benchmark::kMicrosecond);

// One 256 KiB chunk: log text (escaped as JSON text) or bytes (base64).
void BM_chunk(benchmark::State& state) {
    std::string data;
    if (state.range(0) == 0)
        while (data.size() < 256 * 1024) data += "a typical line of build output, with \"quotes\" and a tab\there\n";
    else
        data.assign(256 * 1024, '\xff');
    cc::sandbox::EventWriter w("bench");
    std::string out;
    for (auto _ : state) {
        w.chunk_into(out, "stdout", data);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_chunk)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
