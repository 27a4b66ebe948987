// What the result check costs a member (averaging/ResultCheck.h): sketching one aggregation block
// (128 Ki elements) of a sender's part against the result, beside what the round already spends
// on the same elements: decoding fp16, and CenteredClip over four senders. Prints milliseconds per
// million elements of each and the sum for a whole vector of `--elements`. A benchmark measures;
// it asserts nothing.
//
// Per round, a member sketches every part it sent against the result (the whole vector once) and,
// as a reducer, every counted member's part of its shard (the vector's 1/n, n times): about two
// vectors' worth of blocks, plus decoding them again from the kept payloads.
// Then the size of a member's check record (averaging/SketchRecord.h) in a group of `--members`
// (its view of every member, its own sketch of every other shard; random sums: every digit
// used), beside the same numbers written as JSON writes a double (up to 17 digits).
//
//   bench_resultcheck [--elements N] [--repeats R] [--members M]
#include "averaging/ResultCheck.h"
#include "averaging/RobustAggregation.h"
#include "averaging/SketchRecord.h"
#include "compress/Compression.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace dedloc;

namespace {

constexpr std::size_t Block = 128 * 1024;

double seconds(const std::chrono::steady_clock::time_point &start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A member's sketches in a group of `members`, every number drawn at random.
RoundSketches randomSketches(std::size_t members, std::mt19937 &rng)
{
    std::uniform_real_distribution<double> u(0.0, 1000.0);
    const auto entry = [&](std::uint32_t shard) {
        ShardSketch s;
        s.shard = shard;
        for (auto &q : s.residual)
            q = u(rng) - 500.0;
        for (double *x : {&s.spread, &s.weight, &s.maxWeight, &s.groupWeight, &s.radius, &s.distance, &s.slack})
            *x = u(rng);
        return s;
    };
    RoundSketches r;
    for (std::uint32_t i = 0; i < members; ++i) {
        r.view.push_back({i, entry(0)});
        if (i > 0)
            r.own.push_back(entry(i));
    }
    return r;
}

// The bytes of `sketches` on the wire had each projection been written with up to 17 digits.
std::size_t withSeventeenDigits(const RoundSketches &sketches)
{
    std::size_t bytes = encodeSketches(sketches).dump().size();
    char nine[32], full[32];
    const auto add = [&](double x) {
        bytes += static_cast<std::size_t>(std::snprintf(full, sizeof full, "%.17g", x))
                 - static_cast<std::size_t>(std::snprintf(nine, sizeof nine, "%.9g", x));
    };
    for (const auto &s : sketches.own)
        for (double x : s.residual)
            add(x);
    for (const auto &m : sketches.view)
        for (double x : m.sketch.residual)
            add(x);
    return bytes; // the sums are left at nine digits: a lower bound
}

} // namespace

int main(int argc, char **argv)
{
    std::size_t elements = 18'000'000; // about ALBERT-large's parameters (sahajBERT)
    int repeats = 3;
    std::size_t members = MaxCheckedMembers;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--elements") == 0)
            elements = std::stoul(argv[i + 1]);
        else if (std::strcmp(argv[i], "--repeats") == 0)
            repeats = std::stoi(argv[i + 1]);
        else if (std::strcmp(argv[i], "--members") == 0)
            members = std::stoul(argv[i + 1]);
    }
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0F, 1.0F);
    std::vector<std::vector<float>> senders(4, std::vector<float>(Block));
    for (auto &s : senders)
        for (auto &x : s)
            x = d(rng);
    std::vector<float> result(Block);
    std::vector<const float *> xs;
    for (const auto &s : senders)
        xs.push_back(s.data());
    const AggregationSpec clip{AggregationRule::CenteredClip, 2.0, 8.0};
    double tau = 0.0;
    const auto bytes = encode(Compression::Fp16, senders[0]);
    std::vector<float> decoded(Block);

    double sketch = 1e9, clipping = 1e9, decoding = 1e9;
    for (int r = 0; r < repeats; ++r) {
        auto t = std::chrono::steady_clock::now();
        (void)aggregateParts(clip, xs, {1.0, 1.0, 1.0, 1.0}, result, nullptr, &tau);
        clipping = std::min(clipping, seconds(t));
        t = std::chrono::steady_clock::now();
        SketchBuilder builder(checkSeed("digest"), 0, Compression::Fp16);
        for (std::uint32_t b = 0; b < 8; ++b)
            builder.addBlock(b, senders[b % 4], result, tau, 1.0, 4.0);
        sketch = std::min(sketch, seconds(t) / 8);
        t = std::chrono::steady_clock::now();
        for (int k = 0; k < 8; ++k)
            decode(Compression::Fp16, bytes, decoded);
        decoding = std::min(decoding, seconds(t) / 8);
    }
    const double perMillion = 1e6 / static_cast<double>(Block) * 1e3; // ms per million elements
    std::printf("per million elements (best of %d): sketch %.2f ms, fp16 decode %.2f ms, CenteredClip of 4 senders %.2f ms\n",
                repeats, sketch * perMillion, decoding * perMillion, clipping * perMillion);
    const double millions = static_cast<double>(elements) / 1e6;
    std::printf("a vector of %zu elements: the check (two vectors sketched and decoded) %.0f ms a round; "
                "the reducers' CenteredClip of the same vector %.0f ms\n",
                elements, 2 * millions * (sketch + decoding) * perMillion, millions * clipping * perMillion);
    const CheckRecord record{"", 1000, "e1000-0123456789abcdef", members, std::string(64, 'a'),
                             randomSketches(members, rng)};
    std::printf("a check record in a group of %zu: %zu bytes (with 17-digit projections: %zu or more)\n", members,
                encodeCheckRecord(record).size(), withSeventeenDigits(record.sketches));
    return 0;
}
