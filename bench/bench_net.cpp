// Micro-benchmarks of the egress decision path: normalising a target,
// matching it against the shipped rule set, and parsing request bytes.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "cc/net/host.hpp"
#include "cc/net/rules.hpp"
#include "cc/net/wire.hpp"

using namespace cc::net;

namespace {

const RuleSet& shipped() {
    static RuleSet r = [] {
        RuleOptions o;
        const char* d = std::getenv("CC_DATA_DIR");
        if (d) o.data_dir = std::string(d) + "/egress";
        o.allow = {"127.0.0.1", "*.example.com"};
        return *build_rules(o);
    }();
    return r;
}

void BM_CanonicalName(benchmark::State& s) {
    for (auto _ : s) benchmark::DoNotOptimize(canonical_target("Api.GitHub.com."));
}
BENCHMARK(BM_CanonicalName);

void BM_CanonicalIdn(benchmark::State& s) {
    for (auto _ : s) benchmark::DoNotOptimize(canonical_target("evil.test\xE3\x80\x82" "example.com"));
}
BENCHMARK(BM_CanonicalIdn);

void BM_CanonicalIpForms(benchmark::State& s) {
    for (auto _ : s) benchmark::DoNotOptimize(canonical_target("0251.0376.0251.0376"));
}
BENCHMARK(BM_CanonicalIpForms);

void BM_DecideAllowedName(benchmark::State& s) {
    Target t = *canonical_target("objects.githubusercontent.com");
    for (auto _ : s) benchmark::DoNotOptimize(shipped().check_target(t));
}
BENCHMARK(BM_DecideAllowedName);

void BM_DecideDeniedName(benchmark::State& s) {
    Target t = *canonical_target("not-listed.example.org");
    for (auto _ : s) benchmark::DoNotOptimize(shipped().check_target(t));
}
BENCHMARK(BM_DecideDeniedName);

void BM_VetAddress(benchmark::State& s) {
    Target t = *canonical_target("a.example.com");
    Address a = *parse_ip_literal("93.184.216.34");
    for (auto _ : s) benchmark::DoNotOptimize(shipped().check_address(t, a));
}
BENCHMARK(BM_VetAddress);

void BM_ParseRequestHead(benchmark::State& s) {
    std::string head = "GET http://api.github.com/repos/git/git HTTP/1.1\r\nHost: api.github.com\r\n"
                       "User-Agent: curl/7.88.1\r\nAccept: */*\r\nProxy-Connection: Keep-Alive\r\n\r\n";
    for (auto _ : s) {
        auto h = http::parse_request_head(head);
        benchmark::DoNotOptimize(http::parse_absolute_uri(h->target));
    }
}
BENCHMARK(BM_ParseRequestHead);

void BM_ParseSocksRequest(benchmark::State& s) {
    std::string req = std::string("\x05\x01\x00\x03\x0e", 5) + "api.github.com" + std::string("\x01\xbb", 2);
    socks5::Request r;
    for (auto _ : s) benchmark::DoNotOptimize(socks5::parse_request(req, r));
}
BENCHMARK(BM_ParseSocksRequest);

}  // namespace

BENCHMARK_MAIN();
