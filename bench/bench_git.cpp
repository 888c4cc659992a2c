// Micro-benchmarks of cc-pushgate's per-push protocol work: parsing a large
// command list, decoding a chunked body, demultiplexing side-band.
#include <benchmark/benchmark.h>

#include "cc/git/http.hpp"
#include "cc/git/pkt_line.hpp"
#include "cc/git/receive_pack.hpp"

namespace {

std::string commands(int n) {
    std::string out;
    std::string a(40, 'a'), b(40, 'b');
    for (int i = 0; i < n; ++i) {
        std::string line = a + " " + b + " refs/heads/branch-" + std::to_string(i);
        if (i == 0) line += std::string(1, '\0') + "report-status-v2 side-band-64k quiet object-format=sha1";
        out += cc::git::pkt(line + "\n");
    }
    return out + "0000PACK";
}

void BM_parse_commands(benchmark::State& st) {
    std::string body = commands(static_cast<int>(st.range(0)));
    for (auto _ : st) {
        cc::git::RequestParser p;
        for (std::size_t off = 0; off < body.size(); off += 65536) {
            auto r = p.feed(std::string_view(body).substr(off, 65536));
            benchmark::DoNotOptimize(r);
        }
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * body.size()));
}
BENCHMARK(BM_parse_commands)->Arg(1)->Arg(1000);

void BM_chunked_decode(benchmark::State& st) {
    std::string payload(65536, 'x'), wire;
    for (int i = 0; i < 64; ++i) wire += "10000\r\n" + payload + "\r\n";
    wire += "0\r\n\r\n";
    std::string out;
    out.reserve(wire.size());
    for (auto _ : st) {
        cc::git::http::ChunkedDecoder d;
        out.clear();
        auto r = d.decode(wire, out, wire.size());
        benchmark::DoNotOptimize(r);
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * wire.size()));
}
BENCHMARK(BM_chunked_decode);

void BM_sideband_demux(benchmark::State& st) {
    std::string stream = cc::git::sideband(2, std::string(1 << 20, 'p')) + cc::git::sideband(1, "000eunpack ok\n0000") + "0000";
    for (auto _ : st) {
        cc::git::SidebandDemux d;
        auto r = d.feed(stream);
        benchmark::DoNotOptimize(r);
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * stream.size()));
}
BENCHMARK(BM_sideband_demux);

}  // namespace

BENCHMARK_MAIN();
