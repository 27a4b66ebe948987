// The butterfly all-reduce with the sparse codec (core/averaging/ButterflyAllReduce.h with
// TopK4Bit PARTs, SparseFp16 RESULTs and error feedback): block-aligned shards, the average of
// exactly what the members sent, identical on every member, and kept as a replayable update.
#include "AllReduceSwarm.h"
#include "averaging/AveragedUpdate.h"
#include "averaging/ButterflyAllReduce.h"
#include "compress/ErrorFeedback.h"

#include <QtTest>

#include <cmath>

using namespace dedloc;
using namespace dedloc::test;

namespace {

constexpr std::size_t Block = BlockwiseBlockElements;

// What a member with a fresh residual sends of x.
std::vector<float> sentOf(const std::vector<float> &x)
{
    std::vector<float> c(x.size());
    decode(Compression::TopK4Bit, encode(Compression::TopK4Bit, x), c);
    return c;
}

bool aligned(const std::vector<std::int64_t> &shards, std::int64_t elements)
{
    std::int64_t sum = 0, lastNonzero = -1;
    for (std::size_t j = 0; j < shards.size(); ++j)
        if (shards[j] > 0)
            lastNonzero = static_cast<std::int64_t>(j);
    for (std::size_t j = 0; j < shards.size(); ++j) {
        if (static_cast<std::int64_t>(j) != lastNonzero && shards[j] % static_cast<std::int64_t>(Block) != 0)
            return false;
        sum += shards[j];
    }
    return sum == elements;
}

} // namespace

class TestAllReduceSparse final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Three senders (weights 4, 1, 2) of 50 000 elements, parts of 5000 (rounded up to 2 blocks):
    // every shard but the last is whole blocks; each member's values become the weighted average
    // of what the members sent (their top-k, 4-bit values), within fp16 rounding, zero wherever
    // no member kept the element, bit-identical on every member; each residual holds the rest.
    void sparseRoundAveragesWhatWasSent()
    {
        const std::size_t n = 50000;
        Swarm s({true, true, true}, {4.0, 1.0, 2.0}, n);
        const auto given = s.values;
        std::vector<std::vector<float>> sent;
        for (const auto &x : given)
            sent.push_back(sentOf(x));
        std::vector<ErrorFeedback> feedback(3);
        std::vector<AllReduceOptions> o(3);
        std::vector<std::vector<EncodedPiece>> captured(3);
        for (std::size_t i = 0; i < 3; ++i) {
            o[i].codec = Compression::TopK4Bit;
            o[i].partElements = 5000;
            o[i].errorFeedback = &feedback[i];
            o[i].capture = &captured[i];
        }
        s.run(o, {0, 1, 2});
        std::size_t keptAnywhere = 0;
        for (std::size_t i = 0; i < 3; ++i) {
            QVERIFY(s.reports[i].complete);
            QVERIFY(aligned(s.reports[i].shardSizes, static_cast<std::int64_t>(n)));
            QVERIFY(bitwiseEqual(s.values[i], s.values[0]));
            for (std::size_t k = 0; k < n; ++k)
                QCOMPARE(sent[i][k] + feedback[i].residual()[k], given[i][k]);
        }
        for (std::size_t k = 0; k < n; ++k) {
            const double avg = (4.0 * sent[0][k] + 1.0 * sent[1][k] + 2.0 * sent[2][k]) / 7.0;
            QVERIFY2(std::abs(s.values[0][k] - avg) <= std::abs(avg) * std::ldexp(1.0, -10) + 1e-7,
                     qPrintable(QString("%1: %2 vs %3").arg(k).arg(s.values[0][k]).arg(avg)));
            keptAnywhere += (sent[0][k] != 0 || sent[1][k] != 0 || sent[2][k] != 0) ? 1 : 0;
        }
        // At most 3 x 64 of every 4096 elements are nonzero.
        std::size_t nonzero = 0;
        for (float v : s.values[0])
            nonzero += v != 0.0F ? 1 : 0;
        QVERIFY(nonzero <= keptAnywhere && keptAnywhere <= 3 * (n / Block + 1) * TopKKeptPerBlock);
        // The round's RESULT encodings assemble into an update that replays the average exactly.
        const auto update = assembleUpdate(7, 7, resultCodec(Compression::TopK4Bit), n, captured[1]);
        QVERIFY(update.has_value());
        QVERIFY(bitwiseEqual(decodeUpdate(*update), s.values[1]));
        QVERIFY(update->bytes.size() < n); // under one byte per element
    }

    // The leader's shares are laid out in whole blocks too; a member of weight 0 sends nothing
    // and keeps no residual, and the average is the others'.
    void sharesInBlocksAndAWeightlessMember()
    {
        const std::size_t n = 9 * Block + 123;
        Swarm s({true, true, true}, {1.0, 1.0, 1.0}, n);
        const std::int64_t shares[] = {3, 1, 1};
        for (std::size_t i = 0; i < 3; ++i)
            s.members[i].share = shares[i];
        const auto sent0 = sentOf(s.values[0]), sent1 = sentOf(s.values[1]);
        std::vector<ErrorFeedback> feedback(3);
        std::vector<AllReduceOptions> o(3);
        for (std::size_t i = 0; i < 3; ++i) {
            o[i].codec = Compression::TopK4Bit;
            o[i].errorFeedback = &feedback[i];
        }
        o[2].myWeight = 0.0;
        s.run(o, {0, 1, 2});
        QVERIFY(feedback[2].residual().empty());
        for (std::size_t i = 0; i < 3; ++i) {
            QVERIFY(s.reports[i].complete);
            QCOMPARE(s.reports[i].shardSizes[0], std::int64_t(6 * Block));
            QVERIFY(aligned(s.reports[i].shardSizes, static_cast<std::int64_t>(n)));
            QVERIFY(bitwiseEqual(s.values[i], s.values[0]));
        }
        for (std::size_t k = 0; k < n; ++k) {
            const double avg = (static_cast<double>(sent0[k]) + sent1[k]) / 2.0;
            QVERIFY(std::abs(s.values[2][k] - avg) <= std::abs(avg) * std::ldexp(1.0, -10) + 1e-7);
        }
    }
};

QTEST_APPLESS_MAIN(TestAllReduceSparse)
#include "tst_allreducesparse.moc"
