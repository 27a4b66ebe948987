// Who sends what in a state round (core/averaging/StateRoundPlan.h), and that a copy round of the
// real all-reduce hands every member the source's state bit for bit while the others send no
// values.
#include "AllReduceSwarm.h"
#include "averaging/StateRoundPlan.h"
#include "net/TokenBucket.h"

#include <QtTest>

#include <thread>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// Members in BEGIN order: trainers have weight 1, auxiliaries and monitors 0.
GroupMember member(double weight, double bandwidth, bool repair)
{
    GroupMember m;
    m.weight = weight;
    m.bandwidth = bandwidth;
    m.repair = repair;
    return m;
}

std::vector<double> weightsOf(const std::vector<GroupMember> &members, const std::vector<bool> &trains)
{
    std::vector<double> out;
    for (std::size_t i = 0; i < members.size(); ++i)
        out.push_back(planStateRound(members, i, trains[i]).myWeight);
    return out;
}

} // namespace

class TestStateRoundPlan final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void periodicRoundAveragesTheTrainers()
    {
        const std::vector<GroupMember> m{member(1, 10, false), member(0, 100, false), member(1, 50, false)};
        const auto plan = planStateRound(m, 0, true);
        QVERIFY(!plan.source);
        QVERIFY(plan.freshTrainer);
        QCOMPARE(weightsOf(m, {true, false, true}), (std::vector<double>{1, 0, 1}));
    }

    void repairCopiesTheFastestFreshTrainer()
    {
        // Member 3 asked for repair; among the fresh trainers 1 and 2 tie on the largest
        // bandwidth (the auxiliary 0 is faster, but holds no state): the lower index is the source.
        const std::vector<GroupMember> m{member(0, 100, false), member(1, 20, false), member(1, 20, false),
                                         member(1, 50, true), member(1, 5, false)};
        for (std::size_t i = 0; i < m.size(); ++i) {
            const auto plan = planStateRound(m, i, i != 0);
            QCOMPARE(plan.source, std::optional<std::size_t>(1));
        }
        QCOMPARE(weightsOf(m, {false, true, true, true, true}), (std::vector<double>{0, 1, 0, 0, 0}));
    }

    void everyTrainerRepairingCopiesTheFastest()
    {
        // The auxiliary (weight 0) is fastest but holds no state: trainer 1 is the source.
        const std::vector<GroupMember> m{member(1, 10, true), member(1, 50, true), member(0, 100, false)};
        QCOMPARE(planStateRound(m, 0, true).source, std::optional<std::size_t>(1));
        QVERIFY(!planStateRound(m, 0, true).freshTrainer);
        QCOMPARE(weightsOf(m, {true, true, false}), (std::vector<double>{0, 1, 0}));
        QCOMPARE(planStateRound(m, 7, true).myWeight, 0.0); // an index outside the group
    }

    // The plan on the real all-reduce: member 2 (the source) sends its state, members 0 (repairing)
    // and 1 (fresh, slower) send weight 0; all three end with member 2's values exactly, and
    // member 0, which reduces no shard (client mode), uploaded nothing.
    void copyRoundHandsEveryoneTheSourcesState()
    {
        Swarm s({false, true, true}, {1.0, 1.0, 1.0}, 20011);
        auto listed = s.members;
        listed[0].repair = true;
        listed[1].bandwidth = 10.0;
        listed[2].bandwidth = 30.0;
        const auto source = s.values[2];
        TokenBucket buckets[3];
        std::vector<AllReduceOptions> o(3);
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < 3; ++i) {
            o[i].upload = &buckets[i];
            o[i].myWeight = planStateRound(listed, i, true).myWeight;
            threads.emplace_back(
                [&, i] { s.reports[i] = s.endpoints[i]->run("group-1/state", s.members, i, s.values[i], o[i]); });
        }
        for (auto &t : threads)
            t.join();
        QCOMPARE(o[2].myWeight, 1.0);
        QCOMPARE(buckets[0].bytesTaken(), std::uint64_t{0});
        for (std::size_t i = 0; i < 3; ++i) {
            QVERIFY(s.reports[i].complete);
            QCOMPARE(s.reports[i].minShardWeight, 1.0);
            QVERIFY(bitwiseEqual(s.values[i], source));
        }
    }
};

QTEST_GUILESS_MAIN(TestStateRoundPlan)
#include "tst_stateroundplan.moc"
