// Weight bounds of the butterfly all-reduce (AllReduceOptions::maxWeight,
// core/averaging/ButterflyAllReduce.h): a member that claims more samples than any sender may
// have is refused on its own authenticated links and named as the offender, and the honest
// members average without it. Member 2 of each group here is hand-written (support/RogueMember.h).
// Messages for rounds not started yet are kept within their bounds, also between rounds.
#include "AllReduceSwarm.h"
#include "RogueMember.h"
#include "averaging/ButterflyAllReduce.h"
#include "net/DataPlaneSecurity.h"

#include <QtTest>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// 6000 elements, 3 equal shards of 2 parts of 1000: shard j is [2000 j, 2000 j + 2000).
constexpr std::size_t PartElements = 1000, ShardElements = 2000;
// Per sender; member 1's honest weight (3) is exactly at the bound and must pass.
constexpr double MaxWeight = 3.0;

// Members 0 and 1 honest, with weights 1 and 3; member 2 the rogue, listed with weight 2.
struct BoundedGroup {
    std::vector<PeerIdentity> ids = identities(3);
    Swarm swarm{{true, true, true},
                {1.0, 3.0, 2.0},
                3 * ShardElements,
                {std::make_shared<DataPlaneSecurity>(ids[0], AccessPolicy{}),
                 std::make_shared<DataPlaneSecurity>(ids[1], AccessPolicy{})},
                ids};
    RogueMember rogue{ids[2], "group-1", 2, 3, ShardElements, PartElements};

    BoundedGroup()
    {
        swarm.members[2].endpoint = rogue.endpoint();
        for (std::uint32_t j = 0; j < 2; ++j)
            rogue.connect(j, swarm.members[j].endpoint, ids[j].publicKey());
    }

    // The rogue's PARTs for shards 0 and 1: its own values, with the weight it claims.
    std::vector<RoguePart> roguePartsClaiming(double weight) const
    {
        std::vector<RoguePart> parts;
        const auto &mine = swarm.values[2];
        for (std::uint32_t j = 0; j < 2; ++j)
            for (std::uint32_t p = 0; p < 2; ++p) {
                const auto begin = mine.begin() + static_cast<std::ptrdiff_t>(j * ShardElements + p * PartElements);
                parts.push_back({j, p, 2, p * PartElements, {begin, begin + PartElements}, weight, {}});
            }
        return parts;
    }

    // One round of the honest members 0 and 1 with the bound set; the rogue stops after it.
    // `rogueBound`: the weight the honest reducers count the rogue's PARTs for at most.
    void run(AggregationSpec aggregation = {}, double rogueBound = std::numeric_limits<double>::infinity())
    {
        AllReduceOptions o;
        o.senderWeightBounds[swarm.members[2].peerId] = rogueBound;
        o.aggregation = aggregation;
        o.partElements = PartElements;
        o.maxWeight = MaxWeight;
        o.senderTimeout = 1.0;
        o.reducerTimeout = 1.5;
        swarm.run(o, {0, 1});
        rogue.stop();
    }
};

// The rogue's PARTs carry its values scaled by `factor`, with its listed weight.
std::vector<RoguePart> scaled(std::vector<RoguePart> parts, float factor)
{
    for (auto &p : parts)
        for (float &x : p.values)
            x *= factor;
    return parts;
}

// The root-mean-square distance, over shards 0 and 1, of `values` from the honest members' mean.
double errorAgainst(const std::vector<float> &values, const std::vector<double> &honest)
{
    double sum = 0.0;
    for (std::size_t k = 0; k < 2 * ShardElements; ++k)
        sum += (values[k] - honest[k]) * (values[k] - honest[k]);
    return std::sqrt(sum / (2 * ShardElements));
}

bool unchanged(const std::vector<float> &values, const std::vector<float> &local, std::size_t begin)
{
    return std::equal(values.begin() + static_cast<std::ptrdiff_t>(begin), values.end(),
                      local.begin() + static_cast<std::ptrdiff_t>(begin));
}

} // namespace

class TestAllReduceBounds final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The rogue sends its real values but claims 1e6 samples in its PART headers (the bound is 3)
    // and stays silent as the reducer of shard 2. Reducers 0 and 1 refuse both of its PARTs,
    // name it, exclude it and average shards 0 and 1 over members 0 and 1 alone:
    // (1 x0 + 3 x1) / 4, with a total weight of 4 in their own shard and in the RESULT each
    // sends the other. A sender whose PARTs were refused gets no RESULT.
    void partAboveTheWeightBoundIsRefused()
    {
        BoundedGroup g;
        auto &s = g.swarm;
        const auto expected = s.expectedAverage({0, 1});
        const auto local = s.values;
        g.rogue.start(g.roguePartsClaiming(1e6), std::nullopt);
        g.run();
        for (std::size_t i : {0, 1}) {
            const auto &r = s.reports[i];
            QCOMPARE(r.offences.size(), std::size_t(1));
            QCOMPARE(r.offences[0].member, std::size_t(2));
            QCOMPARE(r.offences[0].messages, 2); // its 2 PARTs for this member's shard
            QVERIFY2(QString::fromStdString(r.offences[0].reason).contains(QStringLiteral("above the bound")),
                     r.offences[0].reason.c_str());
            QCOMPARE(r.excludedSenders, std::vector<std::uint32_t>{2});
            QCOMPARE(r.myShardWeight, 4.0);
            QCOMPARE(r.groupWeight, 4.0); // member 0's RESULT to 1 and 1's RESULT to 0 included
            QVERIFY(closeTo(s.values[i], expected, 0, 2 * ShardElements));
            QVERIFY(unchanged(s.values[i], local[i], 2 * ShardElements)); // shard 2: nobody reduced it
        }
        const auto averaged = static_cast<std::ptrdiff_t>(2 * ShardElements); // shards 0 and 1, bitwise equal
        QVERIFY(std::equal(s.values[0].begin(), s.values[0].begin() + averaged, s.values[1].begin()));
        QCOMPARE(g.rogue.resultWeights(), std::vector<double>{});
    }

    // The rogue claims a weight within the bound (3) but above what the honest reducers counted
    // for it in its progress records (0.5, AllReduceOptions::senderWeightBounds): they count it
    // for 0.5, as no offence (an honest sender's weight may run ahead of its records), so shards
    // 0 and 1 hold (1 x0 + 3 x1 + 0.5 x2) / 4.5 instead of (1 x0 + 3 x1 + 3 x2) / 7.
    void aWeightAboveWhatTheSenderWasCountedForIsClipped()
    {
        BoundedGroup g;
        auto &s = g.swarm;
        s.members[2].weight = 0.5;
        const auto expected = s.expectedAverage({0, 1, 2});
        s.members[2].weight = 2.0;
        g.rogue.start(g.roguePartsClaiming(3.0), std::nullopt);
        g.run({}, 0.5);
        for (std::size_t i : {0, 1}) {
            const auto &r = s.reports[i];
            QVERIFY(r.offences.empty());
            QCOMPARE(r.myShardWeight, 4.5);
            QVERIFY(closeTo(s.values[i], expected, 0, 2 * ShardElements));
        }
    }

    // The rogue sends valid PARTs (its listed weight, 2), so it is averaged into shards 0 and 1,
    // but as the reducer of shard 2 it answers with RESULTs claiming a total weight of 9.5, more
    // than 3 senders of at most 3 samples each can have. Both honest members refuse them, name
    // it and keep shard 2 at their local values; the group's weight stays the honest total 6,
    // which is also what the honest reducers' RESULTs carry (6 > the per-sender bound 3: a
    // RESULT is bound by the group's size, not by one sender's).
    void resultAboveTheGroupBoundIsRefused()
    {
        BoundedGroup g;
        auto &s = g.swarm;
        const auto expected = s.expectedAverage({0, 1, 2});
        const auto local = s.values;
        g.rogue.start(g.roguePartsClaiming(2.0), RogueAnswer{0.5F, 9.5});
        g.run();
        for (std::size_t i : {0, 1}) {
            const auto &r = s.reports[i];
            QCOMPARE(r.offences.size(), std::size_t(1));
            QCOMPARE(r.offences[0].member, std::size_t(2));
            QCOMPARE(r.offences[0].messages, 2); // the 2 RESULTs of shard 2
            QVERIFY2(QString::fromStdString(r.offences[0].reason).contains(QStringLiteral("total weight")),
                     r.offences[0].reason.c_str());
            QVERIFY(r.excludedSenders.empty());
            QVERIFY(!r.complete); // shard 2's results were refused
            QCOMPARE(r.myShardWeight, 6.0);
            QCOMPARE(r.groupWeight, 6.0);
            QVERIFY(closeTo(s.values[i], expected, 0, 2 * ShardElements));
            QVERIFY(unchanged(s.values[i], local[i], 2 * ShardElements));
        }
        QCOMPARE(g.rogue.resultWeights(), std::vector<double>(4, 6.0)); // 2 parts from each of 2 reducers
    }

    // The rogue's first PART to each reducer has a header of a million nested CBOR arrays (1 MB,
    // under the 16 MiB frame bound). Read naively it overflows the reducer's stack (the process
    // dies); here it is dropped unread as malformed, an offence of the rogue, which the honest
    // members then exclude at the sender timeout while they average between themselves.
    void deeplyNestedHeaderIsRefusedUnread()
    {
        BoundedGroup g;
        auto parts = g.roguePartsClaiming(2.0);
        for (auto &p : parts)
            if (p.part == 0)
                p.rawHeader = std::string(1'000'000, '\x81') + '\x00';
        g.rogue.start(parts, std::nullopt);
        g.run();
        for (std::size_t i : {0, 1}) {
            const auto &r = g.swarm.reports[i];
            QCOMPARE(r.offences.size(), std::size_t(1));
            QCOMPARE(r.offences[0].member, std::size_t(2));
            QVERIFY2(QString::fromStdString(r.offences[0].reason).contains(QStringLiteral("not a CBOR map")),
                     r.offences[0].reason.c_str());
            QCOMPARE(r.excludedSenders, std::vector<std::uint32_t>{2});
        }
    }

    // The rogue sends its values x 1000 with its listed weight (2 of 6): valid PARTs, so the
    // weighted mean takes them and lands about 333 x its values away from the honest mean. With
    // CenteredClip the honest reducers move at most 2/6 of the clip radius towards it: shards 0
    // and 1 end closer to the honest mean than the two honest members' values are to each other
    // (unit normals: about 1.4 apart per element), and each reducer names the rogue, and only it,
    // an outlier.
    void centeredClipBoundsAScaledSender()
    {
        for (const auto rule : {AggregationRule::Mean, AggregationRule::CenteredClip}) {
            BoundedGroup g;
            auto &s = g.swarm;
            const auto honest = s.expectedAverage({0, 1});
            const auto local = s.values;
            g.rogue.start(scaled(g.roguePartsClaiming(2.0), 1000.0F), std::nullopt);
            g.run({rule, 2.0});
            for (std::size_t i : {0, 1}) {
                const auto &r = s.reports[i];
                const double error = errorAgainst(s.values[i], honest);
                if (rule == AggregationRule::Mean) {
                    QVERIFY2(error > 100.0, std::to_string(error).c_str());
                    QVERIFY(r.offences.empty());
                    QVERIFY(r.clipVerdicts.empty()); // the mean judges nobody
                    continue;
                }
                const double honestSpread = errorAgainst(local[0], {local[1].begin(), local[1].end()});
                qInfo("CenteredClip: RMS distance from the honest mean %.3f, between the honest members %.3f", error,
                      honestSpread);
                QVERIFY2(error < honestSpread, std::to_string(error).c_str());
                // Its valid PARTs are no offence by themselves: the verdicts name it the only
                // outlier among the two others this reducer weighed (the caller strikes a
                // persistent one, averaging/OutlierRecord.h).
                QVERIFY(r.offences.empty());
                QCOMPARE(r.clipVerdicts.size(), std::size_t(2));
                for (const auto &v : r.clipVerdicts) {
                    QVERIFY(v.member != i);
                    QCOMPARE(v.outlier, v.member == 2);
                }
                QCOMPARE(r.myShardWeight, 6.0); // the rogue's samples still count toward the batch
            }
        }
    }

    // Between rounds a stranger floods a reachable member's ROUTER with 100 messages of 1 MiB for
    // a round that never starts there. They leave ZeroMQ's queue (read by the endpoint's drainer
    // while no round runs) and only as many as fit in 64 MiB are kept for that round.
    void aFloodBetweenRoundsIsKeptWithinBounds()
    {
        AllReduceEndpoint reducer(true);
        zmq::context_t context(1);
        zmq::socket_t dealer(context, zmq::socket_type::dealer);
        dealer.set(zmq::sockopt::linger, 0);
        dealer.connect(reducer.endpoint());
        const auto header = nlohmann::json::to_cbor(nlohmann::json{{"g", "a-round-never-started"}});
        const std::string payload(1 << 20, 'x');
        for (int i = 0; i < 100; ++i) {
            QVERIFY(dealer.send(zmq::buffer(header), zmq::send_flags::sndmore));
            QVERIFY(dealer.send(zmq::buffer(payload), zmq::send_flags::none));
        }
        // Each kept message: the ROUTER's 5-byte routing id, the header and the payload.
        const std::size_t each = 5 + header.size() + payload.size();
        const std::size_t fit = (std::size_t(64) << 20) / each; // 63
        for (int waited = 0; waited < 200 && reducer.waiting().messages < fit; ++waited)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::this_thread::sleep_for(std::chrono::milliseconds(300)); // the rest arrives and is dropped
        const auto kept = reducer.waiting();
        QCOMPARE(kept.messages, fit);
        QCOMPARE(kept.bytes, fit * each);
    }
};

QTEST_APPLESS_MAIN(TestAllReduceBounds)
#include "tst_allreducebounds.moc"
