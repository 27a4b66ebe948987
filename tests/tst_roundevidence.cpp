// RoundEvidence (core/averaging/RoundEvidence.h): real all-reduce rounds on loopback that check
// results. Every member sketches what it sent and received, every reducer its view of its shard;
// the views of honest reducers hold against the members' own sketches, and the view of a reducer
// that moved its average fails, however it is sketched.
#include "AllReduceSwarm.h"
#include "averaging/ButterflyAllReduce.h"
#include "averaging/ResultCheck.h"

#include <QtTest>

using namespace dedloc;
using namespace dedloc::test;

namespace {

constexpr std::size_t Members = 4;
// Three aggregation blocks (ClipBlockElements) per shard, the last one short.
constexpr std::size_t Elements = Members * (2 * 128 * 1024 + 5000);
const std::string Digest = "the group average's digest";

AllReduceOptions checked() { return checkedRoundOptions(); }

// Reducer j's check from the reports of a round every member ran.
ShardCheck checkOf(const Swarm &s, std::size_t j, const std::string &digest = Digest)
{
    const auto view = s.reports[j].evidence->sketch(digest).view;
    std::vector<MemberSketch> own;
    for (std::size_t i = 0; i < Members; ++i) {
        if (i == j)
            continue;
        for (const auto &sketch : s.reports[i].evidence->sketch(digest).own)
            if (sketch.shard == j)
                own.push_back({i, sketch});
    }
    return checkShard(view, own, j, CheckScope{2.0, true, true});
}

// Values of honest members: one common gradient plus noise of each member's own.
void shareACommonSignal(Swarm &s)
{
    const auto common = randomVector(Elements, 7);
    for (std::size_t i = 0; i < Members; ++i)
        for (std::size_t k = 0; k < Elements; ++k)
            s.values[i][k] = 2.0F * common[k] + s.values[i][k];
}

} // namespace

class TestRoundEvidence final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void honestReducersHoldTheirCheck()
    {
        Swarm s(std::vector<bool>(Members, true), {10.0, 20.0, 30.0, 40.0}, Elements);
        shareACommonSignal(s);
        s.run(checked(), {0, 1, 2, 3});
        for (std::size_t j = 0; j < Members; ++j) {
            QVERIFY(s.reports[j].complete);
            QVERIFY(s.reports[j].evidence);
            const auto sketches = s.reports[j].evidence->sketch(Digest);
            QCOMPARE(sketches.view.size(), Members); // every member counted in its shard
            QCOMPARE(sketches.own.size(), Members - 1);
            for (const auto &o : sketches.own) {
                QCOMPARE(o.excluded, 0.0);
                QCOMPARE(o.averaged, 0.0);
                QCOMPARE(o.weight, 3.0 * s.members[j].weight);
            }
            for (const auto &entry : sketches.view) {
                // Each block counted the member at its weight: three blocks.
                QCOMPARE(entry.sketch.weight, 3.0 * s.members[entry.member].weight);
                QCOMPARE(entry.sketch.excluded, 0.0);
            }
            const auto check = checkOf(s, j);
            QVERIFY2(check.outcome == CheckOutcome::Holds, check.reason.c_str());
            QVERIFY(check.disputes.empty());
        }
        // Another digest, other signs: still holds, with other numbers.
        QCOMPARE(checkOf(s, 1, "another").outcome, CheckOutcome::Holds);
        QVERIFY(s.reports[1].evidence->sketch("another").view[0].sketch.residual
                != s.reports[1].evidence->sketch(Digest).view[0].sketch.residual);
    }

    // Member 2 pulls every block of its average toward zero: its own view, sketched truly from
    // the parts it kept, fails; the other reducers hold.
    void aReducerThatMovesItsAverageFails()
    {
        Swarm s(std::vector<bool>(Members, true), {10.0, 20.0, 30.0, 40.0}, Elements);
        shareACommonSignal(s);
        std::vector<AllReduceOptions> o(Members, checked());
        o[2].tamperAverage = [](std::span<float> average) {
            for (auto &x : average)
                x *= 0.5F;
        };
        s.run(o, {0, 1, 2, 3});
        for (std::size_t j = 0; j < Members; ++j) {
            const auto check = checkOf(s, j);
            QVERIFY2((check.outcome == CheckOutcome::Fails) == (j == 2), check.reason.c_str());
            QVERIFY(check.disputes.empty());
        }
        QVERIFY(checkOf(s, 2).reason.find("not CenteredClip's") != std::string::npos);
    }

    // Without the option nothing is kept and the RESULT headers carry no radius.
    void uncheckedRoundsKeepNothing()
    {
        Swarm s(std::vector<bool>(Members, true), {1.0, 1.0, 1.0, 1.0}, 4 * 20000);
        auto o = checked();
        o.checkResults = false;
        s.run(o, {0, 1, 2, 3});
        for (const auto &r : s.reports) {
            QVERIFY(r.complete);
            QVERIFY(!r.evidence);
        }
    }
};

QTEST_GUILESS_MAIN(TestRoundEvidence)
#include "tst_roundevidence.moc"
