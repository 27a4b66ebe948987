// ResultCheck (core/averaging/ResultCheck.h): a reducer's CenteredClip result checked from the
// members' sketches. A group of five reduces a shard of four blocks here as PartReducer does
// (aggregateParts per block, the result through the codec); each member sketches what it sent
// and received. Honest results hold for every seed, moved ones fail even when the reducer uses
// its own sketch to hide the move, one lying member cannot fail an honest reducer.
#include "averaging/ResultCheck.h"
#include "averaging/RobustAggregation.h"

#include <QtTest>

#include <cmath>
#include <functional>
#include <random>

using namespace dedloc;

namespace {

constexpr std::size_t Members = 5, Blocks = 4, BlockElements = 4096, Reducer = 0;
const AggregationSpec Clip{AggregationRule::CenteredClip, 2.0};
std::vector<double> Weights{100.0, 80.0, 120.0, 90.0, 110.0};

std::vector<float> throughCodec(Compression codec, std::vector<float> v)
{
    const auto bytes = encode(codec, v);
    decode(codec, bytes, v);
    return v;
}

Compression g_resultCodec = Compression::SparseFp16; // the results' codec of the shard last reduced

// One reduced shard: what each member sent (as the reducer decoded it) and the result.
struct Shard {
    std::vector<std::vector<std::vector<float>>> sent; // [member][block]
    std::vector<std::vector<float>> result;            // [block], as the members received it
    std::vector<double> tau, total;                    // [block]
};

// Member `leaver` is counted in the first two blocks only (it left mid-round); none by default.
std::size_t g_leaver = Members;
bool counted(std::size_t member, std::size_t block) { return member != g_leaver || block < 2; }

// Reduces the shard; `lie` may change a block's result before it is encoded.
Shard reduce(Compression codec, const std::function<void(std::size_t, std::vector<float> &)> &lie = {},
             unsigned dataSeed = 3)
{
    std::mt19937 rng(dataSeed);
    std::normal_distribution<float> d(0.0F, 1.0F);
    Shard s;
    s.sent.assign(Members, std::vector<std::vector<float>>(Blocks));
    for (std::size_t b = 0; b < Blocks; ++b) {
        std::vector<float> common(BlockElements);
        for (auto &x : common)
            x = 0.5F * d(rng);
        std::vector<const float *> xs;
        std::vector<double> ws;
        for (std::size_t i = 0; i < Members; ++i) {
            auto x = common;
            for (auto &v : x)
                v += d(rng);
            // The reducer averages its raw values, which error feedback made the codec's already
            // for TopK4Bit (ErrorFeedback.h).
            s.sent[i][b] = i == Reducer && codec != Compression::TopK4Bit ? x : throughCodec(codec, x);
            if (counted(i, b)) {
                xs.push_back(s.sent[i][b].data());
                ws.push_back(Weights[i]);
            }
        }
        std::vector<float> out(BlockElements);
        double tau = 0.0;
        s.total.push_back(aggregateParts(Clip, xs, ws, out, nullptr, &tau));
        s.tau.push_back(tau);
        if (lie)
            lie(b, out);
        s.result.push_back(throughCodec(resultCodec(codec), out));
        g_resultCodec = resultCodec(codec);
    }
    return s;
}

MemberSketch sketchOf(const Shard &s, std::size_t member, const std::string &digest)
{
    SketchBuilder builder(checkSeed(digest), Reducer, g_resultCodec);
    for (std::size_t b = 0; b < Blocks; ++b)
        if (counted(member, b))
            builder.addBlock(static_cast<std::uint32_t>(b), s.sent[member][b], s.result[b], s.tau[b], Weights[member],
                             s.total[b]);
    return {member, builder.sketch()};
}

std::vector<MemberSketch> sketches(const Shard &s, const std::string &digest)
{
    std::vector<MemberSketch> all;
    for (std::size_t i = 0; i < Members; ++i)
        all.push_back(sketchOf(s, i, digest));
    return all;
}

std::string digestNumber(int k) { return "digest-" + std::to_string(k); }

// Moves every block's result by `size` x (the largest counted weight x tau / W: what one
// clipped sender moves it by at most), in a random direction of the block.
std::function<void(std::size_t, std::vector<float> &)> moveBy(double size, const Shard &reference)
{
    return [size, &reference](std::size_t b, std::vector<float> &v) {
        std::mt19937 rng(static_cast<unsigned>(99 + b));
        std::normal_distribution<double> d(0.0, 1.0);
        std::vector<double> dir(v.size());
        double n = 0.0;
        for (auto &x : dir) {
            x = d(rng);
            n += x * x;
        }
        const double step = size * 120.0 * reference.tau[b] / reference.total[b] / std::sqrt(n);
        for (std::size_t e = 0; e < v.size(); ++e)
            v[e] += static_cast<float>(step * dir[e]);
    };
}

// The reducer's own sketch set to cancel the others' sum as far as its bounds let it.
void cancelWithOwnSketch(std::vector<MemberSketch> &all)
{
    std::array<double, CheckProjections> others{};
    for (const auto &m : all)
        if (m.member != Reducer)
            for (std::size_t k = 0; k < CheckProjections; ++k)
                others[k] += m.sketch.residual[k];
    double n = 0.0;
    for (double x : others)
        n += x * x;
    n = std::sqrt(n);
    auto &own = all[Reducer].sketch;
    const double most = 0.999 * std::sqrt(ProjectionBound) * own.spread;
    for (std::size_t k = 0; k < CheckProjections; ++k)
        own.residual[k] = -others[k] * std::min(1.0, most / n);
}

// Checks a view whose owners' own sketches are `own` (the honest view by default).
ShardCheck check(const std::vector<MemberSketch> &view, const std::vector<MemberSketch> &own)
{
    return checkShard(view, own, Reducer, CheckScope{Clip.radius, true, true});
}
ShardCheck check(const std::vector<MemberSketch> &view) { return check(view, view); }

} // namespace

class TestResultCheck final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void anHonestResultHoldsForEverySeed_data()
    {
        QTest::addColumn<int>("codec");
        QTest::addColumn<double>("heavy"); // member 2's samples: 900, most of the group's (pullWeight)
        QTest::newRow("fp32") << static_cast<int>(Compression::None) << 120.0;
        QTest::newRow("fp16") << static_cast<int>(Compression::Fp16) << 120.0;
        QTest::newRow("blockwise 8-bit") << static_cast<int>(Compression::Blockwise8Bit) << 120.0;
        // Not uniform 8-bit: its clipped tails bound no error, and its rounds are not checked.
        QTest::newRow("top-k 4-bit") << static_cast<int>(Compression::TopK4Bit) << 120.0;
        QTest::newRow("fp16, heavy") << static_cast<int>(Compression::Fp16) << 900.0;
    }
    void anHonestResultHoldsForEverySeed()
    {
        QFETCH(int, codec);
        QFETCH(double, heavy);
        const struct Restore { ~Restore() { Weights[2] = 120.0; } } restore; // for the later tests
        Weights[2] = heavy;
        const auto shard = reduce(static_cast<Compression>(codec));
        double widest = 0.0; // the largest share of its allowance an honest sum took
        for (int k = 0; k < 40; ++k) {
            const auto all = sketches(shard, digestNumber(k));
            QCOMPARE(all[2].sketch.maxWeight, pullWeight(heavy, shard.total[0])); // bounds its spread: not its samples
            const auto c = check(all);
            widest = std::max(widest, c.sum / c.allowance);
            QVERIFY2(c.outcome == CheckOutcome::Holds, c.reason.c_str());
            QVERIFY(c.disputes.empty());
        }
        qInfo("honest sums took at most %.4f of their allowance", widest);
    }

    // A sender counted in part of the shard's blocks only (its other parts never came) sums fewer
    // RESULT headers: an honest view holds; a moved result still fails.
    void aSenderCountedInSomeBlocksOnly()
    {
        g_leaver = 3;
        const auto honest = reduce(Compression::Fp16);
        const auto moved = reduce(Compression::Fp16, moveBy(4.0, honest));
        for (int k = 0; k < 10; ++k) {
            const auto all = sketches(honest, digestNumber(k));
            QVERIFY(all[3].sketch.groupWeight < all[0].sketch.groupWeight);
            const auto c = check(all);
            QVERIFY2(c.outcome == CheckOutcome::Holds, c.reason.c_str());
            QCOMPARE(check(sketches(moved, digestNumber(k))).outcome, CheckOutcome::Fails);
        }
        g_leaver = Members;
    }

    void theSketchDependsOnTheSeedAlone()
    {
        const auto shard = reduce(Compression::Fp16);
        QCOMPARE(sketchOf(shard, 2, "a").sketch, sketchOf(shard, 2, "a").sketch);
        QVERIFY(sketchOf(shard, 2, "a").sketch.residual != sketchOf(shard, 2, "b").sketch.residual);
        QCOMPARE(sketchOf(shard, 2, "a").sketch.weight, Weights[2] * Blocks);
    }

    // The reducer changed its result and reports every sketch truly (the members agree with it).
    void aChangedResultFails_data()
    {
        QTest::addColumn<int>("kind");
        QTest::newRow("scaled x1000") << 0;
        QTest::newRow("sign flipped") << 1;
        QTest::newRow("moved 4 clipped senders' worth") << 2;
    }
    void aChangedResultFails()
    {
        QFETCH(int, kind);
        const auto honest = reduce(Compression::Fp16);
        std::function<void(std::size_t, std::vector<float> &)> lie;
        if (kind == 0)
            lie = [](std::size_t, std::vector<float> &v) { for (auto &x : v) x *= 1000.0F; };
        else if (kind == 1)
            lie = [](std::size_t, std::vector<float> &v) { for (auto &x : v) x = -x; };
        else
            lie = moveBy(4.0, honest);
        const auto shard = reduce(Compression::Fp16, lie);
        for (int k = 0; k < 20; ++k) {
            const auto c = check(sketches(shard, digestNumber(k)));
            QVERIFY2(c.outcome == CheckOutcome::Fails,
                     qPrintable(QString("seed %1: %2 <= %3").arg(k).arg(c.sum).arg(c.allowance)));
            QVERIFY(c.disputes.empty());
        }
    }

    // The reducer knows every part, so it can compute the others' sketches and pick its own entry
    // to cancel them; its bounds leave it a move of about twice its own clipped part's
    // (ResultCheck.h).
    void aReducerHidingWithItsOwnEntryIsCaughtBeyondItsBound()
    {
        const auto honest = reduce(Compression::Fp16);
        const auto moved = reduce(Compression::Fp16, moveBy(4.0, honest));
        for (int k = 0; k < 20; ++k) {
            auto all = sketches(moved, digestNumber(k));
            const auto own = all;
            cancelWithOwnSketch(all);
            const auto c = check(all, own);
            QVERIFY2(c.outcome == CheckOutcome::Fails, c.reason.c_str());
            QVERIFY(c.disputes.empty()); // its own entry is its own word
        }
        // The same cancelling hides a small move (the bound is not zero).
        const auto small = reduce(Compression::Fp16, moveBy(0.5, honest));
        auto all = sketches(small, digestNumber(0));
        const auto own = all;
        cancelWithOwnSketch(all);
        QCOMPARE(check(all, own).outcome, CheckOutcome::Holds);
    }

    // A member whose own sketch differs from an honest view disputes it: a lone dispute, not a
    // failure; two are.
    void oneLyingMemberDisputesTwoFail()
    {
        const auto shard = reduce(Compression::Fp16);
        const auto view = sketches(shard, digestNumber(4));
        auto own = view;
        own[3].sketch.residual[0] += own[3].sketch.spread;
        auto c = check(view, own);
        QCOMPARE(c.outcome, CheckOutcome::Disputed);
        QCOMPARE(c.disputes, std::vector<std::size_t>{3});
        own[1].sketch.distance *= 1.01;
        c = check(view, own);
        QCOMPARE(c.outcome, CheckOutcome::Fails);
        QCOMPARE(c.disputes, (std::vector<std::size_t>{1, 3}));
        // A counted member left out of the view disputes it; the reducer's own sketch cannot.
        own = view;
        own[Reducer].sketch.residual[2] += 1.0;
        QCOMPARE(check(view, own).outcome, CheckOutcome::Holds);
        auto partial = view;
        partial.erase(partial.begin() + 2);
        c = check(partial, view);
        QCOMPARE(c.disputes, std::vector<std::size_t>{2});
        QCOMPARE(c.outcome, CheckOutcome::Fails); // and its weights no longer add up
        // A member told it was not counted (or not clipped) in a block it sent disputes the view,
        // whatever the view says of it.
        own = view;
        own[4].sketch.excluded = 1.0;
        c = check(view, own);
        QCOMPARE(c.outcome, CheckOutcome::Disputed);
        QCOMPARE(c.disputes, std::vector<std::size_t>{4});
    }

    // A reducer that moved its result and rewrote one member's entry to hide it: that member
    // disputes it.
    void rewritingAMembersEntryIsDisputed()
    {
        const auto honest = reduce(Compression::Fp16);
        const auto moved = reduce(Compression::Fp16, moveBy(4.0, honest));
        auto view = sketches(moved, digestNumber(5));
        const auto own = view;
        std::array<double, CheckProjections> sum{};
        for (const auto &m : view)
            for (std::size_t k = 0; k < CheckProjections; ++k)
                sum[k] += m.sketch.residual[k];
        for (std::size_t k = 0; k < CheckProjections; ++k)
            view[2].sketch.residual[k] -= sum[k];
        view[2].sketch.spread = view[2].sketch.maxWeight * view[2].sketch.radius;
        const auto c = check(view, own);
        QVERIFY(c.outcome != CheckOutcome::Holds);
        QVERIFY(std::find(c.disputes.begin(), c.disputes.end(), 2U) != c.disputes.end());
    }

    void anEntryOutOfItsBoundsFails()
    {
        const auto view = sketches(reduce(Compression::Fp16), digestNumber(1));
        auto bad = view;
        bad[2].sketch.residual[5] = 1.1 * std::sqrt(ProjectionBound) * bad[2].sketch.spread;
        auto c = check(bad, view);
        QCOMPARE(c.outcome, CheckOutcome::Fails);
        QVERIFY(c.reason.find("member 2") != std::string::npos);
        bad = view;
        bad[4].sketch.spread = 1.01 * bad[4].sketch.maxWeight * bad[4].sketch.radius;
        QCOMPARE(check(bad, view).outcome, CheckOutcome::Fails);
        bad = view;
        bad[1].sketch.residual[0] = std::nan("");
        QCOMPARE(check(bad, view).outcome, CheckOutcome::Fails);
        bad = view;
        bad[1].sketch.weight *= 2.0;
        bad[1].sketch.maxWeight *= 2.0;
        c = check(bad, view);
        QCOMPARE(c.outcome, CheckOutcome::Fails);
        QVERIFY(c.reason.find("add up") != std::string::npos);
    }

    // A reducer that states a radius too small for the spread (0 above all: "every sender sent the
    // same values") would make any result a fixed point; the members lying far from it fail it.
    void aRadiusTooSmallFails()
    {
        auto shard = reduce(Compression::Fp16, moveBy(30.0, reduce(Compression::Fp16)));
        for (auto &t : shard.tau)
            t = 0.0;
        auto all = sketches(shard, digestNumber(6));
        for (std::size_t i = 1; i < Members; ++i)
            QCOMPARE(all[i].sketch.far.size(), Blocks);
        auto c = check(all);
        QCOMPARE(c.outcome, CheckOutcome::Fails);
        QVERIFY2(c.reason.find("too small") != std::string::npos, c.reason.c_str());
        // A radius of 0 where more than half the senders did send the same values holds: only the
        // others lie far (the result is the majority's).
        shard = reduce(Compression::None);
        for (std::size_t b = 0; b < Blocks; ++b) {
            for (std::size_t i = 0; i < 3; ++i)
                shard.sent[i][b] = shard.sent[0][b];
            shard.result[b] = shard.sent[0][b];
            shard.tau[b] = 0.0;
        }
        all = sketches(shard, digestNumber(6));
        QCOMPARE(all[1].sketch.far.size(), std::size_t{0});
        QCOMPARE(all[3].sketch.far.size(), Blocks);
        c = checkShard(all, all, Reducer, CheckScope{Clip.radius, true, true});
        QVERIFY2(c.outcome != CheckOutcome::Fails, c.reason.c_str());
        // Honest rounds have nobody far.
        for (const auto &m : sketches(reduce(Compression::Fp16), digestNumber(6)))
            QVERIFY(m.sketch.far.empty());
    }

    // A reducer that averages without clipping (a huge tau) and says so fails on its radius.
    void anInflatedRadiusFails()
    {
        auto shard = reduce(Compression::Fp16);
        for (auto &t : shard.tau)
            t *= 10.0;
        const auto c = check(sketches(shard, digestNumber(2)));
        QCOMPARE(c.outcome, CheckOutcome::Fails);
        QVERIFY(c.reason.find("radius") != std::string::npos);
        // The honest radius passes that bound with room to spare.
        const auto honest = sketches(reduce(Compression::Fp16), digestNumber(2));
        QVERIFY(honest[0].sketch.radius < 0.5 * TauSlack * Clip.radius * honest[0].sketch.distance);
    }

    void fewerThanThreeCountedDecideNothing()
    {
        auto all = sketches(reduce(Compression::Fp16), digestNumber(3));
        all.resize(2);
        QCOMPARE(check(all).outcome, CheckOutcome::Undecided);
    }

    // A reducer that says it averaged without clipping (as where fewer than three senders were
    // counted) or counted nobody, to leave everyone out of its view: the members' own sketches
    // fail it.
    void aViewLeavingTheMembersOutFails()
    {
        const std::vector<MemberSketch> empty;
        std::vector<MemberSketch> own;
        for (std::size_t i = 1; i < Members; ++i) {
            ShardSketch s;
            s.averaged = 3.0;
            own.push_back({i, s});
        }
        auto c = check(empty, own);
        QCOMPARE(c.outcome, CheckOutcome::Fails);
        QVERIFY(c.reason.find("without clipping") != std::string::npos);
        // Two may be honest (the two counted in a block after the others' exclusion), where the
        // reducer did not send itself; with it, they make three: more than an average covers.
        own.resize(2);
        QCOMPARE(checkShard(empty, own, Reducer, CheckScope{Clip.radius, false, true}).outcome, CheckOutcome::Undecided);
        QCOMPARE(check(empty, own).outcome, CheckOutcome::Fails);
        for (auto &o : own) {
            o.sketch.averaged = 0.0;
            o.sketch.excluded = 3.0;
        }
        c = check(empty, own);
        QCOMPARE(c.outcome, CheckOutcome::Fails);
        QCOMPARE(c.disputes.size(), std::size_t{2});
        own.resize(1);
        QCOMPARE(check(empty, own).outcome, CheckOutcome::Disputed);
        // A lone dispute while some sender's record is missing may be one of several: undecided.
        QCOMPARE(checkShard(empty, own, Reducer, CheckScope{Clip.radius, true, false}).outcome, CheckOutcome::Undecided);
    }

    // Blocks averaged without clipping (tau < 0), in which a member was not counted, or of radius
    // 0 whose result is the member's own values add nothing; radius 0 and other values: excluded.
    void blocksNotClippedOrNotCountedAddNothing()
    {
        SketchBuilder builder(checkSeed("x"), 1, Compression::None);
        const std::vector<float> a(64, 1.0F), b(64, 0.0F);
        builder.addBlock(0, a, b, -1.0, 10.0, 30.0);
        builder.addBlock(1, a, b, 1.0, 0.0, 30.0);
        QVERIFY(builder.empty());
        builder.addBlock(3, a, b, 4.0, 10.0, 30.0);
        QVERIFY(!builder.empty());
        auto s = builder.sketch();
        QCOMPARE(s.weight, 10.0);
        QCOMPARE(s.distance, 8.0);      // ||a - b|| = sqrt(64)
        QCOMPARE(s.spread, 10.0 * 4.0); // clipped to tau: u c n = 10 x (4 / 8) x 8
        QCOMPARE(s.slack, 0.0);         // fp32 results of 0 carry no rounding
        QVERIFY(s.far.empty());         // 8 <= 4 x 4
        // Radius 0, "every sender alike": the member's own values count, and nothing moves ...
        builder.addBlock(4, a, a, 0.0, 10.0, 30.0);
        QCOMPARE(builder.sketch().weight, 20.0);
        QCOMPARE(builder.sketch().residual, s.residual);
        // ... other values lie far from it.
        builder.addBlock(5, a, b, 0.0, 10.0, 30.0);
        builder.addBlock(6, a, b, 1.0, 10.0, 30.0); // 8 > 4 x 1
        QCOMPARE(builder.sketch().far, (std::vector<std::uint32_t>{5, 6}));
        double q2 = 0.0;
        for (double q : s.residual)
            q2 += q * q;
        QVERIFY(q2 > 0.0);
        QVERIFY(q2 <= ProjectionBound * s.spread * s.spread);
    }

    // Values near the float range (a hostile sender's, or result) overflow float sums: the
    // projections are taken again in double and the sketch stays finite.
    void valuesNearTheFloatRangeStayFinite()
    {
        SketchBuilder builder(checkSeed("y"), 0, Compression::None);
        std::vector<float> huge(4096, 3e38F), zero(4096, 0.0F);
        for (std::size_t k = 0; k < huge.size(); k += 2)
            huge[k] = -3e38F;
        builder.addBlock(0, huge, zero, 1e38, 10.0, 30.0);
        const auto s = builder.sketch();
        QCOMPARE(s.excluded, 0.0);
        double q2 = 0.0;
        for (double q : s.residual) {
            QVERIFY(std::isfinite(q));
            q2 += q * q;
        }
        QVERIFY(q2 > 0.0);
    }

    // The error bound of each result codec holds on values of every size, subnormal fp16 ones too.
    void theResultErrorBoundHolds_data()
    {
        QTest::addColumn<int>("codec");
        QTest::newRow("fp32") << static_cast<int>(Compression::None);
        QTest::newRow("fp16") << static_cast<int>(Compression::Fp16);
        QTest::newRow("blockwise 8-bit") << static_cast<int>(Compression::Blockwise8Bit);
    }
    void theResultErrorBoundHolds()
    {
        QFETCH(int, codec);
        const auto c = static_cast<Compression>(codec);
        std::mt19937 rng(5);
        std::normal_distribution<double> d(0.0, 1.0);
        for (double scale : {1e-7, 1e-3, 1.0, 300.0}) {
            std::vector<double> exact(3 * 4096 + 100);
            for (auto &x : exact)
                x = scale * d(rng) * (d(rng) > 2.0 ? 30.0 : 1.0); // heavy tails
            std::vector<float> rounded(exact.begin(), exact.end());
            const auto received = throughCodec(c, rounded);
            double e2 = 0.0;
            for (std::size_t k = 0; k < exact.size(); ++k)
                e2 += (exact[k] - received[k]) * (exact[k] - received[k]);
            const double bound = resultErrorBound(c, received);
            QVERIFY2(std::sqrt(e2) <= bound, qPrintable(QString("scale %1: error %2 > bound %3").arg(scale).arg(std::sqrt(e2)).arg(bound)));
            QVERIFY(bound < 0.1 * std::sqrt(static_cast<double>(exact.size())) * scale * 30.0); // and not vacuous
        }
    }
};

QTEST_GUILESS_MAIN(TestResultCheck)
#include "tst_resultcheck.moc"
