// Corpus replay: a fuzz target's entry point built with the ordinary compiler
// and run once on every file of its corpus (and on the empty input), as a
// test of `make test`. It catches a target that no longer compiles, and an
// input the corpus already holds that now crashes, without clang or a fuzzing
// run (tests/cli/check_fuzz_smoke.sh does those where clang++ is installed).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        fs::path p = argv[i];
        if (!fs::exists(p)) {
            std::printf("no corpus at %s: the empty input only\n", argv[i]);
            continue;
        }
        if (fs::is_directory(p)) {
            for (const auto& e : fs::recursive_directory_iterator(p))
                if (e.is_regular_file()) inputs.push_back(e.path());
        } else {
            inputs.push_back(p);
        }
    }
    LLVMFuzzerTestOneInput(nullptr, 0);
    for (const auto& p : inputs) {
        std::ifstream f(p, std::ios::binary);
        std::string data((std::istreambuf_iterator<char>(f)), {});
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    }
    std::printf("replayed %zu inputs and the empty one\n", inputs.size());
    return 0;
}
