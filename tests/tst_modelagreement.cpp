// Whether a peer's state is the swarm's (core/averaging/ModelAgreement.h): the digest most live
// records claim at the epoch wins, ties go to the smaller digest, and two claims are needed.
#include "averaging/ModelAgreement.h"

#include <QTest>

using namespace dedloc;

namespace {

ProgressRecord claim(const std::string &peer, long epoch, char digest)
{
    ProgressRecord r;
    r.peerId = peer;
    r.stateEpoch = epoch;
    r.stateDigest = std::string(64, digest);
    return r;
}

const std::string A(64, 'a'), B(64, 'b'), C(64, 'c');

} // namespace

class TestModelAgreement final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theMostClaimedStateWins()
    {
        const std::vector<ProgressRecord> live = {claim("p1", 4, 'a'), claim("p2", 4, 'a'), claim("p3", 4, 'b'),
                                                  claim("p4", 5, 'b'), claim("p5", 5, 'b'), claim("me", 4, 'b')};
        // At epoch 4: a by p1 and p2, b by p3 and this peer (its own digest counts, its own
        // record does not): a tie, which the smaller digest (a) wins.
        const auto s = strayedFromSwarm(live, "me", 4, B);
        QVERIFY(s.has_value());
        QCOMPARE(s->swarmDigest, A);
        QCOMPARE(s->claimants, 2);
        QCOMPARE(s->withMine, 2);
        QVERIFY(!strayedFromSwarm(live, "me", 4, A)); // holding the winner
        QVERIFY(!strayedFromSwarm(live, "me", 5, B)); // at epoch 5, b is everyone's
        const auto c = strayedFromSwarm(live, "me", 5, C);
        QVERIFY(c.has_value());
        QCOMPARE(c->swarmDigest, B);
        QCOMPARE(c->withMine, 1);
        QCOMPARE(stateClaimsAt(live, "me", 4), 3);
        QCOMPARE(stateClaimsAt(live, "me", 6), 0);
    }

    void oneOtherClaimIsNotEnough()
    {
        // A single stranger's record cannot make a peer drop its state.
        QVERIFY(!strayedFromSwarm({claim("x", 3, 'a')}, "me", 3, C));
        // Records without a state (not donors) count for nothing.
        ProgressRecord none;
        none.peerId = "y";
        none.stateEpoch = 3;
        QVERIFY(!strayedFromSwarm({claim("x", 3, 'a'), none}, "me", 3, C));
        // A peer that knows its state differs (empty own digest) takes any state two others hold.
        QVERIFY(strayedFromSwarm({claim("x", 3, 'a'), claim("y", 3, 'a')}, "me", 3, "").has_value());
    }
};

QTEST_GUILESS_MAIN(TestModelAgreement)
#include "tst_modelagreement.moc"
