// ResultAuditor (core/peer/ResultAuditor.h) through real DHT nodes on loopback: after a checked
// all-reduce round of three trainers and an auxiliary member (weight 0, reducing a shard), the
// trainers publish their check records, the auxiliary member publishes its view once it reads the
// group's average from them, and a trainer's auditor judges all four reducers: nobody is struck
// when all are honest; the auxiliary member is when it moved its average, and when it publishes
// nothing (silent at the audit and at the second look).
#include "AllReduceSwarm.h"
#include "MergeFixtures.h"
#include "averaging/BanList.h"
#include "averaging/ResultAudit.h"
#include "peer/ResultAuditor.h"
#include "util/Clock.h"
#include "util/Hash.h"

#include <QtTest>

#include <thread>

using namespace dedloc;
using namespace dedloc::test;

namespace {

constexpr std::size_t Members = 4, Aux = 3;
constexpr std::size_t Elements = Members * (128 * 1024 + 1000);
const AggregationSpec Clip{AggregationRule::CenteredClip, 2.0, 8.0};

struct Outcome {
    std::vector<AuditVerdict> verdicts; // as the trainer 0 reads them
    int strikes = 0;                    // its auditor's
    AuditCounts counts;                 // its auditor's
    bool auxStruck = false;
};

// One checked round (the auxiliary member's average moved by `auxLie`; `auxSilent`: it publishes
// no record), its records published as the swarm does, and trainer 0's audit of it.
Outcome roundAndAudit(float auxLie, bool auxSilent = false)
{
    auto peers = makePeers(Members, 4);
    Swarm s(std::vector<bool>(Members, true), {10.0, 20.0, 30.0, 0.0}, Elements);
    std::vector<AllReduceOptions> options(Members, checkedRoundOptions());
    if (auxLie != 1.0F)
        options[Aux].tamperAverage = [auxLie](std::span<float> v) {
            for (auto &x : v)
                x *= auxLie;
        };
    s.run(options, {0, 1, 2, 3});
    GroupInfo group{"group-1", MergeEpoch, s.members};
    for (std::size_t i = 0; i < Members; ++i)
        group.members[i].peerId = peers[i]->identity.peerId();
    // The trainers' records claim the group's average (one digest: the round is complete).
    const std::string digest = sha256Hex("the average", 11);
    for (std::size_t i = 0; i < Aux; ++i)
        peers[i]->merger->publishChecks(group, digest, *s.reports[i].evidence);
    auto bans = std::make_shared<BanList>();
    ResultAuditor aux(*peers[Aux]->merger, std::make_shared<BanList>(), peers[Aux]->identity.peerId(), Clip, 4.0);
    if (!auxSilent)
        aux.publishView(group, s.reports[Aux].evidence);
    ResultAuditor auditor(*peers[0]->merger, bans, peers[0]->identity.peerId(), Clip, 4.0);
    auditor.schedule(group);
    std::this_thread::sleep_for(std::chrono::seconds(auxSilent ? 10 : 6)); // a silent one: read twice
    Outcome out;
    out.verdicts = auditGroup(group, peers[1]->merger->checkRecords(group), Clip.radius);
    out.strikes = auditor.strikes();
    out.counts = auditor.counts();
    out.auxStruck = bans->strikes(peers[Aux]->identity.peerId(), unixNow()) > 0;
    return out;
}

} // namespace

class TestResultAuditor final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void checksResultsWhereTheGroupCanBeChecked()
    {
        GroupInfo g{"g", 1, std::vector<GroupMember>(4)};
        for (auto &m : g.members)
            m.weight = 1.0;
        QVERIFY(checksResults(g, Clip, Compression::Fp16));
        QVERIFY(!checksResults(g, {AggregationRule::Mean, 2.0, 8.0}, Compression::Fp16));
        QVERIFY(!checksResults(g, Clip, Compression::Uniform8Bit));
        g.members[0].weight = g.members[1].weight = 0.0; // two senders: no majority to defend
        QVERIFY(!checksResults(g, Clip, Compression::Fp16));
        g.members.assign(MaxCheckedMembers + 1, g.members[2]);
        QVERIFY(!checksResults(g, Clip, Compression::Fp16));
    }

    void honestReducersAuxiliaryIncludedAreNotStruck()
    {
        const auto out = roundAndAudit(1.0F);
        QCOMPARE(out.verdicts.size(), Members); // the auxiliary member's view was published and read
        for (const auto &v : out.verdicts)
            QVERIFY2(v.check.outcome == CheckOutcome::Holds, v.check.reason.c_str());
        QCOMPARE(out.strikes, 0);
        QCOMPARE(out.counts.rounds, 1L); // what its summary line counts
        QCOMPARE(out.counts.held, static_cast<long>(Members - 1)); // the others: its own is no news to it
        QCOMPARE(out.counts.failed + out.counts.disputed + out.counts.undecided, 0L);
    }

    void anAuxiliaryReducerThatMovesItsAverageIsStruck()
    {
        const auto out = roundAndAudit(0.5F);
        QCOMPARE(out.verdicts.size(), Members);
        for (const auto &v : out.verdicts)
            QVERIFY2((v.check.outcome == CheckOutcome::Fails) == (v.reducer == Aux), v.check.reason.c_str());
        QCOMPARE(out.strikes, 1);
        QVERIFY(out.auxStruck);
        QCOMPARE(out.counts.failed, 1L);
        QCOMPARE(out.counts.held, static_cast<long>(Members - 2));
    }

    void aSilentAuxiliaryReducerIsStruck()
    {
        const auto out = roundAndAudit(1.0F, true);
        QCOMPARE(out.verdicts.size(), Members);
        QVERIFY(out.verdicts[Aux].silent);
        QCOMPARE(out.strikes, 1);
        QVERIFY(out.auxStruck);
        QCOMPARE(out.counts.rounds, 1L);
        QCOMPARE(out.counts.failed, 1L);
        QCOMPARE(out.counts.held, static_cast<long>(Members - 2));
    }
};

QTEST_GUILESS_MAIN(TestResultAuditor)
#include "tst_resultauditor.moc"
