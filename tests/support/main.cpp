// Catch2 runner for every cc test binary. A listener counts test cases as
// passed, failed or skipped (CC_SKIP) and writes the three numbers to
// $CC_TEST_SUMMARY_DIR/$CC_TEST_ID, which tests/summary.py adds up into the
// closing line of `make test`.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "harness.hpp"

namespace {

struct Counts {
    int passed = 0, failed = 0, skipped = 0;
} counts;
bool current_skipped = false;

struct SummaryListener : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;
    void testCaseStarting(Catch::TestCaseInfo const&) override { current_skipped = false; }
    void testCaseEnded(Catch::TestCaseStats const& stats) override {
        if (stats.totals.assertions.failed > 0 || stats.totals.testCases.failed > 0)
            ++counts.failed;
        else if (current_skipped)
            ++counts.skipped;
        else
            ++counts.passed;
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(SummaryListener)

namespace cc::test {
void mark_skipped(const std::string& reason) {
    current_skipped = true;
    std::string line = Catch::getResultCapture().getCurrentTestName() + ": " + reason;
    std::cerr << "SKIP " << line << '\n';
    // `make test` lists every skip with its reason (tests/summary.py).
    const char* dir = std::getenv("CC_TEST_SUMMARY_DIR");
    const char* id = std::getenv("CC_TEST_ID");
    if (dir && id) {
        ::mkdir(dir, 0777);
        std::ofstream(std::string(dir) + "/" + id + ".skips", std::ios::app) << line << '\n';
    }
}
}  // namespace cc::test

int main(int argc, char* argv[]) {
    int rc = Catch::Session().run(argc, argv);
    const char* dir = std::getenv("CC_TEST_SUMMARY_DIR");
    const char* id = std::getenv("CC_TEST_ID");
    if (dir && id) {
        ::mkdir(dir, 0777);
        std::ofstream f(std::string(dir) + "/" + id);
        f << counts.passed << ' ' << counts.failed << ' ' << counts.skipped << '\n';
    }
    return rc;
}
