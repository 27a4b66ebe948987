#pragma once
// One member process of bench_allreduce (`bench_allreduce --member ...`): fills its vector, runs
// one warm-up round and the timed rounds of one implementation, and writes its round times, one
// a line, to <dir>/result.<rank>. The members of a measurement meet through files in `dir`
// (BenchFiles.h barriers; gloo: a c10d::FileStore).
#include <filesystem>
#include <string>

namespace dedloc::bench {

// The host a member in client mode is given: it binds nothing (behind NAT, not reachable).
inline constexpr const char *ClientModeHost = "-";

struct MemberTask {
    std::string impl; // ours-none, ours-fp16, ours-8bit, gloo or gloo-fp16
    int rank = 0, n = 0, rounds = 0;
    long elements = 0;
    std::filesystem::path dir;
    std::string host; // the address to bind; ClientModeHost: client mode (ours only)
};

// Returns the process's exit status: 0, or 1 after printing why the member failed.
int runMember(const MemberTask &task);

} // namespace dedloc::bench
