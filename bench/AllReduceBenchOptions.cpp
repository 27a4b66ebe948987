#include "AllReduceBenchOptions.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <sstream>

namespace dedloc::bench {

const char *const kUsage = R"(usage: bench_allreduce [options]

Times one all-reduce (the average) of a vector of E floats across N member processes on this
machine: our butterfly all-reduce beside libtorch's gloo ring all-reduce (ProcessGroupGloo),
at each N. Each measurement spawns N members of this executable; they meet through files in a
temporary directory and run one warm-up round, then the timed rounds.

options (default in brackets):
  --n LIST           member counts, comma-separated, each 2-64 [2,4,8]
  --elements E       floats in the vector, 1000 or more [25000000]
  --rounds R         timed rounds per measurement [3]
  --impls LIST       comma-separated, any of these [ours-none,ours-fp16,ours-8bit,gloo]:
                       ours-none   our butterfly, fp32 on the wire
                       ours-fp16   our butterfly, fp16 on the wire (encoding timed)
                       ours-8bit   our butterfly, 8-bit uniform quantization on the wire
                       gloo        gloo SUM all-reduce of an fp32 tensor, then / N
                       gloo-fp16   the same on an fp16 tensor (converted before timing)
                       ours-*-fresh  the same as ours-*, but every round opens its connections
                                   and closes them after it (ours keeps them across rounds)
  --host ADDR        address the members bind on loopback [127.0.0.1]
  --link-mbit R      link rate in Mbit/s for the "vs bound" column; 0: no bound [0]
  --netns-mbit R     root only: each member in its own network namespace, with a veth link
                     limited to R Mbit/s each way (tc tbf); implies --link-mbit R; 0: loopback [0]
  --internet DOWN/UP root only: every member on its own host of an emulated internet
                     (tests/support/EmulatedInternet), its link limited to DOWN Mbit/s down and
                     UP up (tc tbf), e.g. 50/10; public addresses, all reachable. Not with
                     --netns-mbit; the bound comes from DOWN/UP (--link-mbit is ignored)
  --behind-nat K     with --internet: the last K of the N members are volunteers behind home
                     routers that masquerade (nftables NAT, two volunteers per router, no port
                     forward), on the same DOWN/UP links; the others are public hosts. K < every
                     N. Ours runs them in client mode (no ROUTER, empty endpoint in the group,
                     no shard to reduce). gloo connects every pair of members, which members
                     behind NAT cannot accept: its rows print "-" (skipped) [0]
  --delay-ms D       with --internet: every host holds each packet it sends D ms (a user-space
                     delay line, tests/support/DelayLine; no netem here), so any two members are
                     2D ms apart (round trip) on top of the links' queues [0]
  --curve            CurveZMQ on our members' links, as in the swarm (gloo unaffected)
  -h, --help         print this and exit
environment, for experiments: DEDLOC_BENCH_PART_ELEMENTS our part size in floats [the codec's:
  16384, 65536 in 8-bit];
  DEDLOC_BENCH_ALL_AT_ONCE (set) ours sends to every reducer and sender at once even on links
  slow enough for the staggered schedule (up to 50 Mbit/s up; see AllReduceOptions::staggered);
  DEDLOC_BENCH_NO_RTT (set) ours chooses its schedule and sizes its staggered send buffers as if
  the round trip were not measured (by default the warm-up round measures it,
  AllReduceOptions::roundTripSeconds: 10 ms or more sends to everyone at once);
  DEDLOC_BENCH_VERBOSE (set) member 0 prints the round trip it measured and its schedule;
  DEDLOC_NET_IDLE_RESTART=0 the emulated hosts keep a TCP window across idle time
  (net.ipv4.tcp_slow_start_after_idle=0; volunteers' machines have 1);
  DEDLOC_NET_QUEUE_MS how long the emulated links' tbf may queue a packet [100]

output: a title line, then one row per N and implementation:
  N  impl  seconds  vs gloo  vs gloo16  vs bound
seconds: median over the rounds of the slowest member's time; vs gloo / vs gloo16: seconds
divided by gloo's (fp32) / gloo-fp16's in the same run at the same N ("-" when not measured);
vs bound: seconds / (2 (N-1)/N * E * bytes per element on the wire * 8 / link rate), with 4,
2 or 1 bytes per element (fp32, fp16, 8-bit). A failed measurement prints -1.000 seconds.
On the emulated internet the bound is what the busiest member must send at UP (and receive
at DOWN, the larger of the two times). With C members behind NAT and R = N - C reducers, a
client sends its whole vector (E*b bytes) and receives it back; a reducer sends its parts of
the other R-1 shards ((R-1)/R * E*b) and its shard's result to the N-1 others
((N-1)/R * E*b), and receives as much:
  bound = (R + N - 2)/R * E * b * 8 / min(DOWN, UP)
which is 2 (N-1)/N * E*b*8 / UP when all are reachable (C = 0) and DOWN >= UP.
Exit status: 0 after the table, 2 for a bad command line or missing --netns-mbit/--internet
support.
)";

long wholeNumber(const std::string &option, const std::string &text, long least, long most)
{
    long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value < least || value > most)
        throw UsageError(option + " takes a whole number from " + std::to_string(least) + " to " +
                         std::to_string(most) + ", not '" + text + "'");
    return value;
}

namespace {

const std::vector<std::string> kImpls = {"ours-none",       "ours-fp16",       "ours-8bit", "gloo",
                                         "gloo-fp16",       "ours-none-fresh", "ours-fp16-fresh",
                                         "ours-8bit-fresh"};
const std::vector<std::string> kValueOptions = {"--n",         "--elements",   "--rounds",   "--impls",     "--host",
                                                "--link-mbit", "--netns-mbit", "--internet", "--delay-ms",  "--behind-nat"};

std::vector<std::string> splitList(const std::string &text, char separator = ',')
{
    std::vector<std::string> items;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, separator);)
        items.push_back(item);
    return items;
}

double rate(const std::string &option, const std::string &text)
{
    char *end = nullptr; // strtod, not from_chars: GCC 10's library has no floating-point from_chars
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(value >= 0) || value > 1e6)
        throw UsageError(option + " takes a rate in Mbit/s from 0 to 1000000, not '" + text + "'");
    return value;
}

// "DOWN/UP", both rates above 0.
void setInternet(BenchOptions &o, const std::string &value)
{
    const auto rates = splitList(value, '/');
    if (rates.size() != 2)
        throw UsageError("--internet takes DOWN/UP in Mbit/s, e.g. 50/10, not '" + value + "'");
    o.downMbit = rate("--internet", rates[0]);
    o.upMbit = rate("--internet", rates[1]);
    if (o.downMbit <= 0 || o.upMbit <= 0)
        throw UsageError("--internet needs rates above 0, not '" + value + "'");
}

void setOption(BenchOptions &o, const std::string &option, const std::string &value)
{
    if (option == "--n") {
        o.ns.clear();
        for (const auto &item : splitList(value))
            o.ns.push_back(static_cast<int>(wholeNumber(option, item, 2, 64)));
    } else if (option == "--impls") {
        o.impls = splitList(value);
        for (const auto &impl : o.impls)
            if (std::find(kImpls.begin(), kImpls.end(), impl) == kImpls.end())
                throw UsageError("--impls: unknown implementation '" + impl + "'");
    } else if (option == "--elements") {
        o.elements = wholeNumber(option, value, 1000, 1'000'000'000);
    } else if (option == "--rounds") {
        o.rounds = static_cast<int>(wholeNumber(option, value, 1, 1000));
    } else if (option == "--host") {
        o.host = value;
    } else if (option == "--link-mbit") {
        o.linkMbit = rate(option, value);
    } else if (option == "--netns-mbit") {
        o.netnsMbit = rate(option, value);
    } else if (option == "--internet") {
        setInternet(o, value);
    } else if (option == "--delay-ms") {
        o.delayMs = static_cast<double>(wholeNumber(option, value, 0, 2000));
    } else { // the last of kValueOptions
        o.behindNat = static_cast<int>(wholeNumber(option, value, 0, 63));
    }
    if (o.ns.empty() || o.impls.empty())
        throw UsageError(option + " needs at least one item");
}

void checkCombination(const BenchOptions &o)
{
    if (o.downMbit > 0 && o.netnsMbit > 0)
        throw UsageError("--internet and --netns-mbit do not go together");
    if (o.behindNat > 0 && o.downMbit <= 0)
        throw UsageError("--behind-nat needs --internet");
    if (o.delayMs > 0 && o.downMbit <= 0)
        throw UsageError("--delay-ms needs --internet");
    if (o.behindNat >= *std::min_element(o.ns.begin(), o.ns.end()))
        throw UsageError("--behind-nat " + std::to_string(o.behindNat) +
                         " leaves no reachable member at the smallest N; at least one must be public");
}

} // namespace

BenchOptions parseOptions(int argc, char **argv)
{
    BenchOptions o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help")
            o.help = true;
        else if (a == "--curve")
            o.curve = true;
        else if (std::find(kValueOptions.begin(), kValueOptions.end(), a) == kValueOptions.end())
            throw UsageError((a.starts_with("-") ? "unknown option '" : "unexpected argument '") + a + "'");
        else if (i + 1 == argc)
            throw UsageError(a + " needs a value");
        else
            setOption(o, a, argv[++i]);
    }
    checkCombination(o);
    return o;
}

} // namespace dedloc::bench
