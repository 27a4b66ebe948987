#include "averaging/RoundEvidence.h"

#include "averaging/PartSender.h"

#include <zmq.hpp>

#include <algorithm>
#include <functional>

namespace dedloc {

namespace {

struct KeptResult {
    zmq::message_t payload;
    double radius = 0.0, counted = -1.0, total = 0.0;
    bool present = false;
};

struct KeptBlock {
    double radius = 0.0, total = 0.0;
    std::vector<double> counted; // per member
    bool present = false;
};

// Shares the bytes of `from` (ZeroMQ counts references to a message's buffer).
void share(zmq::message_t &to, zmq::message_t &from) { to.copy(from); }

// Decodes the payloads of parts [first, last) of `layout` into `out` (the block's elements).
void decodeBlock(Compression codec, const std::vector<allreduce::Piece> &layout, std::size_t first, std::size_t last,
                 const std::function<const zmq::message_t &(std::size_t)> &payloadOf, std::vector<float> &out)
{
    const auto begin = layout[first].offset;
    out.assign(layout[last - 1].offset + layout[last - 1].count - begin, 0.0F);
    for (std::size_t p = first; p < last; ++p) {
        const auto &m = payloadOf(p);
        decode(codec, {m.data<std::uint8_t>(), m.size()},
               std::span<float>(out).subspan(layout[p].offset - begin, layout[p].count));
    }
}

} // namespace

struct RoundEvidence::Impl {
    std::size_t me;
    std::vector<std::int64_t> shardSizes;
    std::size_t partElements, blockParts;
    Compression codec;
    bool iSend;
    std::vector<std::vector<allreduce::Piece>> layout; // per shard
    // Sender side, per shard and part.
    std::vector<std::vector<zmq::message_t>> sent;
    std::vector<std::vector<bool>> sentKept;
    std::vector<std::vector<KeptResult>> results;
    // Reducer side.
    std::vector<float> ownValues;
    std::vector<std::vector<zmq::message_t>> parts; // per part, per member
    std::vector<std::vector<bool>> partKept;
    std::vector<KeptBlock> blocks;
    std::vector<zmq::message_t> ownResults; // per part
    std::vector<bool> ownResultKept;

    [[nodiscard]] std::size_t blockCount(std::size_t shard) const
    {
        return (layout[shard].size() + blockParts - 1) / blockParts;
    }
    [[nodiscard]] std::pair<std::size_t, std::size_t> partsOf(std::size_t shard, std::size_t block) const
    {
        const std::size_t first = block * blockParts;
        return {first, std::min(first + blockParts, layout[shard].size())};
    }
    void ownSketches(const CheckSeed &seed, RoundSketches &out) const;
    void viewSketches(const CheckSeed &seed, RoundSketches &out) const;
};

RoundEvidence::RoundEvidence(std::size_t me, std::vector<std::int64_t> shardSizes, std::size_t partElements,
                             std::size_t blockParts, Compression codec, bool iSend)
    : d(std::make_unique<Impl>())
{
    d->me = me;
    d->shardSizes = std::move(shardSizes);
    d->partElements = partElements;
    d->blockParts = std::max<std::size_t>(1, blockParts);
    d->codec = codec;
    d->iSend = iSend;
    const std::size_t n = d->shardSizes.size();
    for (std::size_t j = 0; j < n; ++j)
        d->layout.push_back(allreduce::pieces(static_cast<std::uint64_t>(d->shardSizes[j]), partElements));
    d->sent.resize(n);
    d->sentKept.resize(n);
    d->results.resize(n);
    for (std::size_t j = 0; j < n; ++j) {
        d->sent[j].resize(d->layout[j].size());
        d->sentKept[j].assign(d->layout[j].size(), false);
        d->results[j].resize(d->layout[j].size());
    }
    const auto &mine = d->layout[me];
    d->parts.resize(mine.size());
    d->partKept.resize(mine.size());
    for (std::size_t p = 0; p < mine.size(); ++p) {
        d->parts[p].resize(n);
        d->partKept[p].assign(n, false);
    }
    d->blocks.resize(d->blockCount(me));
    d->ownResults.resize(mine.size());
    d->ownResultKept.assign(mine.size(), false);
}

RoundEvidence::~RoundEvidence() = default;

void RoundEvidence::keepSent(std::size_t shard, std::uint32_t part, zmq::message_t &payload)
{
    share(d->sent[shard][part], payload);
    d->sentKept[shard][part] = true;
}

void RoundEvidence::keepResult(std::size_t shard, std::uint32_t part, double radius, double counted, double total,
                               zmq::message_t &payload)
{
    auto &r = d->results[shard][part];
    share(r.payload, payload);
    r.radius = radius;
    r.counted = counted;
    r.total = total;
    r.present = true;
}

void RoundEvidence::keepOwnValues(std::uint64_t offset, std::span<const float> values)
{
    d->ownValues.resize(static_cast<std::size_t>(d->shardSizes[d->me]));
    std::copy(values.begin(), values.end(), d->ownValues.begin() + static_cast<std::ptrdiff_t>(offset));
}

void RoundEvidence::keepPart(std::size_t sender, std::uint32_t part, zmq::message_t &payload)
{
    share(d->parts[part][sender], payload);
    d->partKept[part][sender] = true;
}

void RoundEvidence::keepBlock(std::uint32_t block, double radius, std::vector<double> counted, double total)
{
    d->blocks[block] = {radius, total, std::move(counted), true};
}

void RoundEvidence::keepOwnResult(std::uint32_t part, zmq::message_t &payload)
{
    share(d->ownResults[part], payload);
    d->ownResultKept[part] = true;
}

// This member's sketch of every other shard it sent values to and got results for.
void RoundEvidence::Impl::ownSketches(const CheckSeed &seed, RoundSketches &out) const
{
    if (!iSend)
        return;
    std::vector<float> xs, vs;
    for (std::size_t j = 0; j < shardSizes.size(); ++j) {
        if (j == me || layout[j].empty())
            continue;
        SketchBuilder builder(seed, static_cast<std::uint32_t>(j), resultCodec(codec));
        double excluded = 0.0, averaged = 0.0;
        bool any = false;
        for (std::size_t b = 0; b < blockCount(j); ++b) {
            const auto [first, last] = partsOf(j, b);
            bool complete = true, agree = true;
            for (std::size_t p = first; p < last; ++p) {
                const auto &r = results[j][p], &r0 = results[j][first];
                complete = complete && r.present && sentKept[j][p];
                agree = agree && r.radius == r0.radius && r.counted == r0.counted && r.total == r0.total;
            }
            if (!complete)
                continue; // no average came back here: this shard keeps local values
            any = true;
            const auto &head = results[j][first];
            if (!agree || !(head.counted > 0.0)) {
                excluded += 1.0;
                continue;
            }
            if (head.radius < 0.0) {
                averaged += 1.0;
                continue;
            }
            decodeBlock(codec, layout[j], first, last, [&](std::size_t p) -> const zmq::message_t & { return sent[j][p]; }, xs);
            decodeBlock(resultCodec(codec), layout[j], first, last,
                        [&](std::size_t p) -> const zmq::message_t & { return results[j][p].payload; }, vs);
            builder.addBlock(static_cast<std::uint32_t>(b), xs, vs, head.radius, head.counted, head.total);
        }
        if (!any)
            continue;
        auto s = builder.sketch();
        s.excluded += excluded;
        s.averaged = averaged;
        out.own.push_back(s);
    }
}

// This member's view of its own shard: every counted member's sketch, from the parts it kept.
void RoundEvidence::Impl::viewSketches(const CheckSeed &seed, RoundSketches &out) const
{
    const std::size_t n = shardSizes.size();
    std::vector<SketchBuilder> builders;
    for (std::size_t i = 0; i < n; ++i)
        builders.emplace_back(seed, static_cast<std::uint32_t>(me), resultCodec(codec));
    std::vector<float> xs, vs;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const auto &block = blocks[b];
        const auto [first, last] = partsOf(me, b);
        bool applied = block.present && block.radius >= 0.0;
        for (std::size_t p = first; applied && p < last; ++p)
            applied = ownResultKept[p];
        if (!applied)
            continue;
        decodeBlock(resultCodec(codec), layout[me], first, last,
                    [&](std::size_t p) -> const zmq::message_t & { return ownResults[p]; }, vs);
        for (std::size_t i = 0; i < n; ++i) {
            if (!(i < block.counted.size() && block.counted[i] > 0.0))
                continue;
            if (i == me) {
                const auto begin = layout[me][first].offset;
                xs.assign(ownValues.begin() + static_cast<std::ptrdiff_t>(begin),
                          ownValues.begin() + static_cast<std::ptrdiff_t>(begin + vs.size()));
            } else {
                bool kept = true;
                for (std::size_t p = first; p < last; ++p)
                    kept = kept && partKept[p][i];
                if (!kept)
                    continue;
                decodeBlock(codec, layout[me], first, last, [&](std::size_t p) -> const zmq::message_t & { return parts[p][i]; }, xs);
            }
            builders[i].addBlock(static_cast<std::uint32_t>(b), xs, vs, block.radius, block.counted[i], block.total);
        }
    }
    for (std::size_t i = 0; i < n; ++i)
        if (!builders[i].empty())
            out.view.push_back({i, builders[i].sketch()});
}

RoundSketches RoundEvidence::sketch(const std::string &digest) const
{
    const auto seed = checkSeed(digest);
    RoundSketches out;
    d->ownSketches(seed, out);
    d->viewSketches(seed, out);
    return out;
}

} // namespace dedloc
