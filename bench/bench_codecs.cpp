// What each wire codec (compress/Compression.h) costs the CPU: encoding and decoding a vector of
// `--elements` gradient-like floats (Gaussian, sigma 1e-3) in parts of `--part` elements, as a
// member of an all-reduce does with its PARTs and RESULTs. Prints nanoseconds per element and
// the bytes on the wire per element (headers included), the median of `--repeats` passes, one
// thread. A benchmark measures; it asserts nothing.
//
// Per round at group size n, a member encodes its whole vector once (its PARTs) and its shard
// once (its RESULTs), and decodes the others' parts of its shard ((n - 1)/n of a vector) and the
// results ((n - 1)/n): about 1 + 1/n vectors encoded and 2 (n - 1)/n decoded.
//
//   bench_codecs [--elements N] [--part P] [--repeats R] [--codecs LIST]
#include "compress/Compression.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace dedloc;

namespace {

struct Options {
    std::size_t elements = 25'000'000;
    std::size_t part = 16 * 1024;
    int repeats = 5;
    std::string codecs = "fp16,uniform8bit,blockwise8bit,topk4bit";
};

bool parse(int argc, char **argv, Options &o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "-h" || a == "--help") {
            std::puts("usage: bench_codecs [--elements N] [--part P] [--repeats R] [--codecs LIST]\n"
                      "  --elements N   floats in the vector [25000000]\n"
                      "  --part P       elements per encoded part, as the all-reduce's PARTs [16384]\n"
                      "  --repeats R    passes; the median is printed [5]\n"
                      "  --codecs LIST  comma-separated codec names [fp16,uniform8bit,blockwise8bit,topk4bit]");
            std::exit(0);
        }
        if (!next)
            return false;
        if (a == "--elements")
            o.elements = std::strtoull(next, nullptr, 10);
        else if (a == "--part")
            o.part = std::strtoull(next, nullptr, 10);
        else if (a == "--repeats")
            o.repeats = std::atoi(next);
        else if (a == "--codecs")
            o.codecs = next;
        else
            return false;
        ++i;
    }
    return o.elements > 0 && o.part > 0 && o.repeats > 0;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void measure(Compression codec, const std::vector<float> &values, const Options &o)
{
    // Every part's bytes in one buffer, touched before the timing: a sender encodes into message
    // buffers it has just allocated, not into fresh pages.
    std::vector<std::size_t> offsets{0};
    for (std::size_t off = 0; off < values.size(); off += o.part)
        offsets.push_back(offsets.back() + encodedBytes(codec, std::min(o.part, values.size() - off)));
    std::vector<std::uint8_t> wire(offsets.back(), 1);
    std::vector<float> out(values.size(), 1.0F);
    std::vector<double> encodeNs, decodeNs;
    for (int r = 0; r < o.repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        std::size_t k = 0;
        for (std::size_t off = 0; off < values.size(); off += o.part, ++k)
            encodeInto(codec, std::span<const float>(values.data() + off, std::min(o.part, values.size() - off)),
                       std::span<std::uint8_t>(wire.data() + offsets[k], offsets[k + 1] - offsets[k]));
        auto t1 = std::chrono::steady_clock::now();
        k = 0;
        for (std::size_t off = 0; off < values.size(); off += o.part, ++k)
            decode(codec, std::span<const std::uint8_t>(wire.data() + offsets[k], offsets[k + 1] - offsets[k]),
                   std::span<float>(out.data() + off, std::min(o.part, values.size() - off)));
        auto t2 = std::chrono::steady_clock::now();
        const double n = static_cast<double>(values.size());
        encodeNs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
        decodeNs.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count() / n);
    }
    std::printf("%-14s %10.2f %10.2f %12.3f\n", compressionName(codec), median(encodeNs), median(decodeNs),
                static_cast<double>(wire.size()) / static_cast<double>(values.size()));
}

} // namespace

int main(int argc, char **argv)
{
    Options o;
    if (!parse(argc, argv, o)) {
        std::fputs("bench_codecs: bad arguments (see --help)\n", stderr);
        return 2;
    }
    std::mt19937 rng(7);
    std::normal_distribution<float> g(0.0F, 1e-3F);
    std::vector<float> values(o.elements);
    for (auto &x : values)
        x = g(rng);
    std::printf("bench_codecs: %zu floats in parts of %zu, median of %d passes, one thread\n", o.elements, o.part,
                o.repeats);
    std::printf("%-14s %10s %10s %12s\n", "codec", "enc ns/el", "dec ns/el", "wire B/el");
    std::size_t start = 0;
    while (start <= o.codecs.size()) {
        const auto comma = o.codecs.find(',', start);
        const auto name = o.codecs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (const auto codec = compressionFromName(name))
            measure(*codec, values, o);
        else
            std::fprintf(stderr, "bench_codecs: unknown codec %s\n", name.c_str());
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return 0;
}
