#pragma once
// bench_allreduce's command line: the options, their parser and the --help text.
#include <stdexcept>
#include <string>
#include <vector>

namespace dedloc::bench {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct BenchOptions {
    std::vector<int> ns = {2, 4, 8};
    std::vector<std::string> impls = {"ours-none", "ours-fp16", "ours-8bit", "gloo"};
    std::string host = "127.0.0.1";
    long elements = 25'000'000;
    int rounds = 3;
    double linkMbit = 0.0, netnsMbit = 0.0;
    double downMbit = 0.0, upMbit = 0.0; // --internet DOWN/UP; 0: not on the emulated internet
    int behindNat = 0;
    double delayMs = 0.0; // --delay-ms: one way, added on every host's outgoing packets
    bool curve = false, help = false;
};

// `text` as a whole number in [least, most]; UsageError naming `option` otherwise.
[[nodiscard]] long wholeNumber(const std::string &option, const std::string &text, long least, long most);

// Throws UsageError for a malformed command line or options that do not go together.
[[nodiscard]] BenchOptions parseOptions(int argc, char **argv);

extern const char *const kUsage;

} // namespace dedloc::bench
