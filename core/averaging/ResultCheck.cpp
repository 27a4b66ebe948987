#include "averaging/ResultCheck.h"
#include "averaging/RobustAggregation.h"

#include <sodium.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <cstring>

namespace dedloc {

namespace {

// CenteredClip stops once a step moves less than 1e-6 tau (RobustAggregation.cpp); the sum it
// leaves is below W x that step. Allowed with a margin.
constexpr double StepAllowance = 1e-5;
// Echoes of one RESULT header field agree when within this relative difference (above the 1e-8
// of the nine significant digits a check record keeps: SketchRecord.h).
constexpr double EchoAgreement = 2e-8;
constexpr double WeightAgreement = 1e-6;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

bool close(double a, double b, double relative) { return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b)); }

double norm(const std::array<double, CheckProjections> &q)
{
    double s = 0.0;
    for (double x : q)
        s += x * x;
    return std::sqrt(s);
}

bool finite(const ShardSketch &s)
{
    for (double x : s.residual)
        if (!std::isfinite(x))
            return false;
    for (double x : {s.spread, s.weight, s.maxWeight, s.groupWeight, s.radius, s.distance, s.slack, s.excluded, s.averaged})
        if (!std::isfinite(x) || x < 0.0)
            return false;
    return true;
}

// Whether a member's sketch keeps within what it says of itself (ResultCheck.h).
bool plausible(const ShardSketch &s, double radius)
{
    if (!finite(s) || s.maxWeight > s.weight * (1.0 + WeightAgreement))
        return false;
    if (s.spread > s.maxWeight * radius * (1.0 + 1e-6))
        return false;
    const double q = norm(s.residual);
    return q * q <= ProjectionBound * s.spread * s.spread * (1.0 + 1e-6);
}

// project() below in double, element by element: for values whose float sums overflow.
std::array<double, CheckProjections> projectExactly(std::span<const float> sent, std::span<const float> result,
                                                    const std::vector<unsigned char> &signs)
{
    std::array<double, CheckProjections> acc{};
    for (std::size_t e = 0; e < sent.size(); ++e) {
        const double d = static_cast<double>(sent[e]) - result[e];
        const unsigned bits = signs[2 * e] | (static_cast<unsigned>(signs[2 * e + 1]) << 8U);
        for (std::size_t k = 0; k < CheckProjections; ++k)
            acc[k] += ((bits >> k) & 1U) != 0 ? d : -d;
    }
    return acc;
}

// sum_e s_k(e) (sent[e] - result[e]) for the 16 sign vectors in `signs` (bit k of the two bytes of
// element e: +1 when set). The differences flip their sign bit by the signs, and are summed in
// float over chunks of ProjectionChunk elements (eight partial sums each, which the compiler
// keeps in vector registers), then in double.
constexpr std::size_t ProjectionChunk = 512;
std::array<double, CheckProjections> project(std::span<const float> sent, std::span<const float> result,
                                             const std::vector<unsigned char> &signs)
{
    std::array<double, CheckProjections> acc{};
    // A whole number of groups of eight: the tail is zeros (no sign flips them into anything).
    std::array<std::uint32_t, ProjectionChunk> diff{}, bits{};
    for (std::size_t c0 = 0; c0 < sent.size(); c0 += ProjectionChunk) {
        const std::size_t len = std::min(ProjectionChunk, sent.size() - c0), padded = (len + 7) / 8 * 8;
        for (std::size_t e = 0; e < padded; ++e) {
            const float d = e < len ? sent[c0 + e] - result[c0 + e] : 0.0F;
            std::memcpy(&diff[e], &d, 4);
            bits[e] = e < len ? signs[2 * (c0 + e)] | (static_cast<std::uint32_t>(signs[2 * (c0 + e) + 1]) << 8U) : 0U;
        }
        for (std::size_t k = 0; k < CheckProjections; ++k) {
            std::array<float, 8> part{};
            for (std::size_t e = 0; e < padded; e += 8)
                for (std::size_t j = 0; j < 8; ++j) {
                    // A clear bit flips the sign: s_k = -1 there.
                    const std::uint32_t flipped = diff[e + j] ^ ((~bits[e + j] >> k & 1U) << 31U);
                    float v;
                    std::memcpy(&v, &flipped, 4);
                    part[j] += v;
                }
            double sum = 0.0;
            for (float p : part)
                sum += p;
            acc[k] += sum;
        }
    }
    for (double a : acc)
        if (!std::isfinite(a))
            return projectExactly(sent, result, signs); // float sums overflowed: values near its range
    return acc;
}

} // namespace

CheckSeed checkSeed(std::string_view digest)
{
    static constexpr std::string_view Domain = "dedloc result check 1:";
    CheckSeed seed{};
    crypto_generichash_state state;
    crypto_generichash_init(&state, nullptr, 0, seed.size());
    crypto_generichash_update(&state, reinterpret_cast<const unsigned char *>(Domain.data()), Domain.size());
    crypto_generichash_update(&state, reinterpret_cast<const unsigned char *>(digest.data()), digest.size());
    crypto_generichash_final(&state, seed.data(), seed.size());
    return seed;
}

SketchBuilder::SketchBuilder(const CheckSeed &seed, std::uint32_t shard, Compression resultCodec)
    : m_seed(seed), m_resultCodec(resultCodec)
{
    m_sketch.shard = shard;
}

void SketchBuilder::addBlock(std::uint32_t block, std::span<const float> sent, std::span<const float> result,
                             double tau, double counted, double total)
{
    if (!(tau >= 0.0) || !(counted > 0.0) || sent.size() != result.size() || sent.empty())
        return;
    double n2 = 0.0;
    for (std::size_t e = 0; e < sent.size(); ++e) {
        const double d = static_cast<double>(sent[e]) - result[e];
        n2 += d * d;
    }
    const double n = std::sqrt(n2);
    if (n > FarRadii * tau) // tau 0: the result is not this member's values
        m_sketch.far.push_back(block);
    const double pull = pullWeight(counted, total);
    const double factor = pull * (n <= tau ? 1.0 : tau / n);
    // Two bytes of ChaCha20 keystream an element: bit k is the sign of s_k there.
    std::array<unsigned char, crypto_stream_chacha20_ietf_NONCEBYTES> nonce{};
    std::memcpy(nonce.data(), &m_sketch.shard, 4); // little-endian hosts only (LittleEndian.h)
    std::memcpy(nonce.data() + 4, &block, 4);
    m_signs.resize(2 * sent.size());
    crypto_stream_chacha20_ietf(m_signs.data(), m_signs.size(), nonce.data(), m_seed.data());
    const auto acc = project(sent, result, m_signs);
    for (std::size_t k = 0; k < CheckProjections; ++k)
        m_sketch.residual[k] += factor * acc[k];
    m_spread2 += factor * n * factor * n;
    m_sketch.weight += counted;
    m_sketch.maxWeight = std::max(m_sketch.maxWeight, pull); // what bounds the spread: not the raw weight
    m_sketch.groupWeight += total;
    m_radius2 += tau * tau;
    m_distance2 += n2;
    m_sketch.slack += total * resultErrorBound(m_resultCodec, result);
}

ShardSketch SketchBuilder::sketch() const
{
    auto s = m_sketch;
    s.spread = std::sqrt(m_spread2);
    s.radius = std::sqrt(m_radius2);
    s.distance = std::sqrt(m_distance2);
    if (finite(s))
        return s;
    ShardSketch unusable;
    unusable.shard = s.shard;
    unusable.excluded = 1.0;
    unusable.far = s.far;
    return unusable;
}

double resultErrorBound(Compression codec, std::span<const float> result)
{
    double e2 = 0.0;
    switch (codec) {
    case Compression::None:
        for (float v : result)
            e2 += std::ldexp(static_cast<double>(v), -24) * std::ldexp(static_cast<double>(v), -24);
        break;
    case Compression::Blockwise8Bit:
        for (std::size_t b = 0; b < result.size(); b += BlockwiseBlockElements) {
            const auto block = result.subspan(b, std::min(BlockwiseBlockElements, result.size() - b));
            float absmax = 0.0F;
            for (float v : block)
                absmax = std::max(absmax, std::abs(v));
            const double step = static_cast<double>(absmax) / 254.0 * (1.0 + 1e-6);
            e2 += static_cast<double>(block.size()) * step * step;
        }
        break;
    default: // fp16 and sparse fp16 (size_adaptive's parts of at most 64 Ki elements are fp16)
        for (float v : result) {
            const double err = std::ldexp(std::abs(static_cast<double>(v)), -11) + std::ldexp(1.0, -25);
            e2 += err * err;
        }
        break;
    }
    return std::sqrt(e2);
}

namespace {

// Whether a member's own sketch is the view's entry for it: the same numbers from the same bytes,
// up to another machine's rounding.
bool sameSketch(const ShardSketch &a, const ShardSketch &b)
{
    constexpr double Rounding = 1e-6;
    std::array<double, CheckProjections> d{};
    for (std::size_t k = 0; k < CheckProjections; ++k)
        d[k] = a.residual[k] - b.residual[k];
    if (!(norm(d) <= Rounding * (norm(b.residual) + b.spread)))
        return false;
    const std::array<std::pair<double, double>, 7> fields{{{a.spread, b.spread},
                                                           {a.weight, b.weight},
                                                           {a.maxWeight, b.maxWeight},
                                                           {a.groupWeight, b.groupWeight},
                                                           {a.radius, b.radius},
                                                           {a.distance, b.distance},
                                                           {a.slack, b.slack}}};
    for (const auto &[x, y] : fields)
        if (!close(x, y, Rounding))
            return false;
    return true;
}

// The members whose own sketch disputes the view: a different entry, or weight in their own
// sketch and no entry in the view.
std::vector<std::size_t> disputesOf(std::span<const MemberSketch> view, std::span<const MemberSketch> own)
{
    std::vector<std::size_t> out;
    for (const auto &o : own) {
        const auto entry = std::find_if(view.begin(), view.end(), [&](const MemberSketch &v) { return v.member == o.member; });
        const bool disputes = o.sketch.excluded > 0.0 ||
                              (entry == view.end() ? o.sketch.weight > 0.0 : !sameSketch(o.sketch, entry->sketch));
        if (disputes)
            out.push_back(o.member);
    }
    return out;
}

// The view's entry summed over the most blocks (the largest total weight): the shard's RESULT
// headers. An entry of a member counted in fewer blocks (its parts of the others never came:
// it left mid-round) sums a part of them.
const ShardSketch &fullest(std::span<const MemberSketch> view)
{
    return std::max_element(view.begin(), view.end(), [](const MemberSketch &a, const MemberSketch &b) {
               return a.sketch.groupWeight < b.sketch.groupWeight;
           })->sketch;
}

// Why the view fails on its own, or "" (ResultCheck.h): its weights, an entry's bounds, the radius.
// Entries summed over every block state the same headers; one over fewer blocks states less of
// both (a reducer cannot claim that of an honest member: its own sketch would say "excluded").
std::string viewFault(std::span<const MemberSketch> view, double radius)
{
    const auto &full = fullest(view);
    double weights = 0.0;
    std::vector<double> distances;
    for (const auto &m : view) {
        const bool every = close(m.sketch.groupWeight, full.groupWeight, EchoAgreement);
        if (every ? !close(m.sketch.radius, full.radius, EchoAgreement)
                  : m.sketch.radius > full.radius * (1.0 + EchoAgreement))
            return "its entries state different RESULT headers";
        if (!plausible(m.sketch, m.sketch.radius))
            return "its entry for member " + std::to_string(m.member) + " is out of that entry's own bounds";
        weights += m.sketch.weight;
        if (every)
            distances.push_back(m.sketch.distance);
    }
    if (!close(weights, full.groupWeight, WeightAgreement))
        return "the weights it counted do not add up to the total its RESULTs stated";
    if (full.radius > TauSlack * radius * median(distances))
        return "the radius it clipped with is above " + std::to_string(TauSlack) + " x the members' distances";
    return {};
}

// Why a block's radius is too small for its senders, or "": half of them or more (the reducer
// counted as near) lie far from its result (ResultCheck.h FarRadii).
std::string farFault(std::span<const MemberSketch> own, const CheckScope &scope)
{
    std::map<std::uint32_t, std::size_t> far;
    std::size_t reporting = scope.reducerSent ? 1 : 0;
    for (const auto &o : own) {
        if (o.sketch.weight > 0.0 || !o.sketch.far.empty())
            ++reporting;
        for (auto b : o.sketch.far)
            ++far[b];
    }
    const std::size_t senders = std::max(scope.senders, reporting);
    for (const auto &[block, n] : far)
        if (2 * n >= senders)
            return std::to_string(n) + " of its " + std::to_string(senders) + " senders lie far from block "
                   + std::to_string(block) + "'s result: its radius is too small for their spread";
    return {};
}

} // namespace

ShardCheck checkShard(std::span<const MemberSketch> view, std::span<const MemberSketch> own, std::size_t reducer,
                      const CheckScope &scope)
{
    ShardCheck out;
    std::vector<MemberSketch> counted;
    for (const auto &m : view)
        if (m.sketch.weight > 0.0 || !finite(m.sketch))
            counted.push_back(m);
    std::vector<MemberSketch> others; // the reducer's entry is its own word: it cannot dispute it
    std::size_t averaged = 0;
    for (const auto &o : own)
        if (o.member != reducer) {
            others.push_back(o);
            averaged += o.sketch.averaged > 0.0 ? 1 : 0;
        }
    out.disputes = disputesOf(counted, others);
    if (out.reason = farFault(others, scope); !out.reason.empty()) {
        out.outcome = CheckOutcome::Fails;
        return out;
    }
    // The reducer averages without clipping only where fewer than three senders were counted.
    if (averaged + (scope.reducerSent ? 1 : 0) > 2 && averaged > 0) {
        out.outcome = CheckOutcome::Fails;
        out.reason = std::to_string(averaged) + " members say it averaged their blocks without clipping";
        return out;
    }
    if (counted.size() >= 3) {
        if (out.reason = viewFault(counted, scope.radius); !out.reason.empty()) {
            out.outcome = CheckOutcome::Fails;
            return out;
        }
        std::array<double, CheckProjections> sum{};
        std::vector<double> slacks;
        for (const auto &m : counted) {
            for (std::size_t k = 0; k < CheckProjections; ++k)
                sum[k] += m.sketch.residual[k];
            slacks.push_back(m.sketch.slack);
        }
        const auto &full = fullest(counted);
        out.sum = norm(sum);
        out.allowance = std::sqrt(ProjectionBound) * (median(slacks) + StepAllowance * full.groupWeight * full.radius);
        if (!(out.sum <= out.allowance)) {
            out.outcome = CheckOutcome::Fails;
            out.reason = "its result is not CenteredClip's over the parts it counted (residual "
                         + std::to_string(out.sum) + ", allowed " + std::to_string(out.allowance) + ")";
            return out;
        }
    }
    if (out.disputes.size() >= 2) {
        out.outcome = CheckOutcome::Fails;
        out.reason = std::to_string(out.disputes.size()) + " members' own sketches dispute its view";
    } else if (out.disputes.size() == 1) {
        out.outcome = scope.allReported ? CheckOutcome::Disputed : CheckOutcome::Undecided;
        out.reason = "member " + std::to_string(out.disputes.front()) + "'s own sketch disputes its view"
                     + (scope.allReported ? "" : " (not every sender's record read: it may not be alone)");
    } else if (counted.size() < 3) {
        out.reason = "fewer than three members counted";
    } else {
        out.outcome = CheckOutcome::Holds;
    }
    return out;
}

} // namespace dedloc
