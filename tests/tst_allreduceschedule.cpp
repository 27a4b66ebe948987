// The staggered schedule of the butterfly all-reduce (core/averaging/PartSender.h): each member
// feeds one peer at a time, and a peer that takes nothing never holds up the rest of the round;
// and the parts it feeds them, of the codec's size.
// Members are threads of this process on 127.0.0.1, as in tst_allreduce.
#include "AllReduceSwarm.h"
#include "averaging/AveragedUpdate.h"
#include "averaging/PartReducer.h"
#include "averaging/PartSender.h"
#include "averaging/RoundLayout.h"
#include "compress/Compression.h"
#include "net/WireMessage.h"

#include <QtTest>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <array>
#include <cmath>
#include <chrono>
#include <thread>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// Member `me`'s PARTs for the shards of `reducers`, sent from DEALERs of its own (plaintext, no
// compression), which are then closed: the member is gone before the round starts.
void sendPartsAndLeave(const Swarm &s, std::size_t me, const std::vector<std::size_t> &reducers,
                       const AllReduceOptions &options)
{
    auto values = s.values[me];
    const auto layout = allreduce::layOutRound("group-1", s.members, me, values, options);
    zmq::context_t context;
    for (auto j : reducers) {
        zmq::socket_t dealer(context, zmq::socket_type::dealer);
        dealer.set(zmq::sockopt::linger, 2000); // the parts leave after close()
        dealer.connect(s.members[j].endpoint);
        const auto parts = allreduce::pieces(layout.shard(j), layout.partElements);
        for (std::uint32_t p = 0; p < parts.size(); ++p) {
            const ShardHeader h{MessageType::Part, "group-1", static_cast<std::uint32_t>(me),
                                static_cast<std::uint32_t>(j), p, static_cast<std::uint32_t>(parts.size()),
                                parts[p].offset, parts[p].count, s.members[me].weight, Compression::None};
            const auto header = encodeShardHeader(h);
            const auto payload = encode(Compression::None, std::span<const float>(values).subspan(
                                                               layout.shardOffsets[j] + parts[p].offset, parts[p].count));
            std::array<zmq::message_t, 2> frames{zmq::message_t(header.data(), header.size()),
                                                 zmq::message_t(payload.data(), payload.size())};
            zmq::send_multipart(dealer, frames);
        }
    }
} // the context waits for the parts to leave (linger)

} // namespace

class TestAllReduceSchedule final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Without a part size set, a round cuts its shards in parts of the codec's size: 16 Ki
    // elements, 64 Ki in the one-byte codecs (whose per-part header then weighs a quarter as
    // much). Seen in what member 0 applies: each RESULT and each part of its own shard reduced.
    void partsFollowTheCodecsDefaultSize_data()
    {
        QTest::addColumn<int>("codec");
        QTest::addColumn<int>("partElements"); // 0: the codec's default
        QTest::addColumn<int>("expected");
        QTest::newRow("fp16") << int(Compression::Fp16) << 0 << 16 * 1024;
        QTest::newRow("none") << int(Compression::None) << 0 << 16 * 1024;
        QTest::newRow("uniform 8-bit") << int(Compression::Uniform8Bit) << 0 << 64 * 1024;
        QTest::newRow("blockwise 8-bit") << int(Compression::Blockwise8Bit) << 0 << 64 * 1024;
        QTest::newRow("uniform 8-bit, set") << int(Compression::Uniform8Bit) << 4096 << 4096;
    }

    void partsFollowTheCodecsDefaultSize()
    {
        QFETCH(int, codec);
        QFETCH(int, partElements);
        QFETCH(int, expected);
        Swarm s({true, true}, {1.0, 1.0}, 300000); // shards of 150 000 elements
        std::vector<std::vector<EncodedPiece>> captured(2);
        std::vector<AllReduceOptions> o(2);
        for (std::size_t i = 0; i < 2; ++i) {
            o[i].codec = static_cast<Compression>(codec);
            o[i].partElements = static_cast<std::size_t>(partElements);
            o[i].capture = &captured[i];
        }
        s.run(o, {0, 1});
        QVERIFY(s.reports[0].complete && s.reports[1].complete);
        std::uint64_t largest = 0, elements = 0;
        for (const auto &piece : captured[0]) {
            largest = std::max(largest, piece.count);
            elements += piece.count;
        }
        QCOMPARE(elements, std::uint64_t{300000});
        QCOMPARE(largest, static_cast<std::uint64_t>(expected));
        QCOMPARE(captured[0].size(), 2 * ((150000 + static_cast<std::size_t>(expected) - 1) / expected));
    }

    // Who staggers, and with what kernel buffer: slow measured uplinks only; 50 ms of the uplink,
    // at least 64 KB, at most 4 MiB.
    void slowUplinksStaggerWithBuffersOfTheirRate()
    {
        QVERIFY(!staggerUplink(0.0));   // not measured yet
        QVERIFY(!staggerUplink(-1.0));
        QVERIFY(staggerUplink(2.0));
        QVERIFY(staggerUplink(50.0));
        QVERIFY(!staggerUplink(100.0)); // a LAN or fibre uplink: everyone at once
        QVERIFY(staggerUplink(10.0, 0.002));  // a slow uplink to near peers
        QVERIFY(!staggerUplink(10.0, 0.02));  // far peers: everyone at once
        QVERIFY(staggerUplink(10.0, std::nan("")));
        QCOMPARE(allreduce::sendBufferBytes(0.0), 64 * 1024);
        QCOMPARE(allreduce::sendBufferBytes(10.0), 64 * 1024); // 62,500 bytes in 50 ms
        QCOMPARE(allreduce::sendBufferBytes(40.0), 250'000);
        QCOMPARE(allreduce::sendBufferBytes(1e6), 4 << 20);
        // Far peers: half the round trip more, so that twice the buffer holds a round trip's bytes.
        QCOMPARE(allreduce::sendBufferBytes(10.0, 0.2), 187'500);  // 1.25 MB/s * 150 ms
        QCOMPARE(allreduce::sendBufferBytes(40.0, 0.1), 500'000);  // 5 MB/s * 100 ms
        QCOMPARE(allreduce::sendBufferBytes(40.0, -1.0), 250'000); // not measured: as 0
        QCOMPARE(allreduce::sendBufferBytes(40.0, std::nan("")), 250'000);
    }

    // Which reducers a sender wakes up for: staggered, only the one in turn (member 1 feeds 2
    // first, then 3, then 0), although every DEALER has room before anything is sent; the others
    // are fed as turns pass. All at once, every reducer with parts left. (A sender that counted
    // the reducers not in turn as room had its loop poll without waiting, spinning a core.)
    void aStaggeredSenderIsFedOnlyByTheReducerInTurn()
    {
        Swarm s({true, true, true, true}, {1.0, 1.0, 1.0, 1.0}, 8000);
        zmq::context_t context;
        for (const bool staggered : {true, false}) {
            AllReduceOptions o;
            o.partElements = 1000;
            o.staggered = staggered;
            o.uploadMbit = 10.0;
            auto round = allreduce::layOutRound("group-1", s.members, 1, s.values[1], o);
            round.start = std::chrono::steady_clock::now();
            allreduce::PartSender sender(round, context, 0);
            for (std::size_t j : {2, 3, 0})
                QVERIFY(sender.dealer(j) && (sender.dealer(j)->get(zmq::sockopt::events) & ZMQ_POLLOUT));
            QVERIFY(!sender.feeds(1)); // itself
            QCOMPARE(sender.feeds(2), true);
            QCOMPARE(sender.feeds(3), !staggered);
            QCOMPARE(sender.feeds(0), !staggered);
        }
        // Nobody listens: what a DEALER queues stays queued. Staggered, one part fills the queue
        // of the reducer in turn (one message), and the loop must hear "nothing to send now",
        // though the others' queues have room; all at once, the others can take more.
        std::vector<GroupMember> deaf = s.members;
        for (auto &m : deaf) { // a port bound and closed again: nothing listens there
            zmq::socket_t closed(context, zmq::socket_type::router);
            closed.set(zmq::sockopt::linger, 0);
            closed.bind("tcp://127.0.0.1:*");
            m.endpoint = closed.get(zmq::sockopt::last_endpoint);
        }
        for (const bool staggered : {true, false}) {
            AllReduceOptions o;
            o.partElements = 1000;
            o.staggered = staggered;
            o.uploadMbit = 10.0;
            auto round = allreduce::layOutRound("group-1", deaf, 1, s.values[1], o);
            round.start = std::chrono::steady_clock::now();
            allreduce::PartSender sender(round, context, 0);
            QCOMPARE(sender.sendSome(1), !staggered);
            QVERIFY(!(sender.dealer(2)->get(zmq::sockopt::events) & ZMQ_POLLOUT) || !staggered);
        }
    }

    // Member 2 delivers its PARTs to members 0 and 1 and is gone when the round starts: nothing
    // listens at its endpoint and its connections are closed. Member 1 comes to member 2 first,
    // both as a sender (it feeds reducers 2, then 0) and as a reducer (it returns results to
    // senders 2, then 0). It must move on to member 0 within StaggerPatience (0.5 s): then member
    // 0 gets member 1's parts and all its results well within the round's hard limit. Had member
    // 1 waited for member 2, member 0 would reduce shard 1 without member 1's late parts.
    void aMemberThatTakesNothingHoldsUpNobody()
    {
        Swarm s({true, true, true}, {1.0, 3.0, 2.0}, 60000);
        AllReduceOptions o;
        o.staggered = true;
        o.partElements = 512; // 40 parts per shard
        o.senderTimeout = 3.0;
        o.reducerTimeout = 4.0;
        // Past it, shards are reduced over what arrived. Waiting for member 2 and sending only a
        // part per second to member 0 (to keep it from excluding member 1 as silent) would take
        // 40 s; moving on takes well under a second.
        o.roundTimeout = 15.0;
        s.endpoints[2].reset(); // its ROUTER closes: nobody listens at member 2's endpoint
        sendPartsAndLeave(s, 2, {0, 1}, o);
        const auto local0 = s.values[0];
        const auto expected = s.expectedAverage({0, 1, 2});
        s.run(o, {0, 1});

        const auto &shards = s.reports[0].shardSizes;
        QCOMPARE(shards.size(), std::size_t{3});
        const auto twoShards = static_cast<std::size_t>(shards[0] + shards[1]);
        for (std::size_t i : {0, 1}) {
            QCOMPARE(s.reports[i].excludedSenders, std::vector<std::uint32_t>{});
            // Shards 0 and 1 came back; shard 2's reducer is gone.
            QCOMPARE(s.reports[i].receivedFraction,
                     static_cast<double>(shards[1 - i]) / static_cast<double>(shards[1 - i] + shards[2]));
            QVERIFY(closeTo(s.values[i], expected, 0, twoShards));
        }
        for (std::size_t k = 0; k < twoShards; ++k)
            QCOMPARE(s.values[0][k], s.values[1][k]);
        for (std::size_t k = twoShards; k < local0.size(); ++k)
            QCOMPARE(s.values[0][k], local0[k]);
    }

    // A staggered sender on a slow uplink may come to a reducer last, with its uplink busy with
    // parts and results for the others. Any message from it restarts the reducer's silence clock:
    // member 1 returned a RESULT to member 0 (heardFrom) 10 s into the round, so with a sender
    // timeout of 5 s member 0 must not exclude it, though no PART of it arrived; unheard, it is
    // excluded.
    void aSenderHeardFromOtherwiseIsNotSilent()
    {
        Swarm s({true, true}, {1.0, 1.0}, 4096);
        AllReduceOptions o;
        o.partElements = 512;
        for (const bool heard : {true, false}) {
            auto values = s.values[0];
            auto round = allreduce::layOutRound("group-1", s.members, 0, values, o);
            round.start = std::chrono::steady_clock::now() - std::chrono::seconds(10);
            allreduce::PartReducer reducer(round, nullptr);
            if (heard)
                reducer.heardFrom(1);
            QCOMPARE(reducer.excludeSilentSenders(5.0), !heard);
            QCOMPARE(reducer.excludedSenders(), heard ? std::vector<std::uint32_t>{} : std::vector<std::uint32_t>{1});
            QCOMPARE(reducer.allPartsReduced(), !heard);
        }
    }
};

QTEST_GUILESS_MAIN(TestAllReduceSchedule)
#include "tst_allreduceschedule.moc"
