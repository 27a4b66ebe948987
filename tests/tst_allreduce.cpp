// Butterfly all-reduce over ZeroMQ on loopback (core/averaging/ButterflyAllReduce.h): members are
// threads of this process, each with its own endpoint, talking over TCP on 127.0.0.1.
#include "AllReduceSwarm.h"
#include "RogueMember.h"
#include "averaging/ButterflyAllReduce.h"
#include "net/DataPlaneSecurity.h"
#include "net/TokenBucket.h"
#include "security/AccessToken.h"
#include "util/Clock.h"

#include <QtTest>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <chrono>
#include <limits>
#include <thread>

using namespace dedloc;
using namespace dedloc::test;

class TestAllReduce final : public QObject {
    Q_OBJECT

    // Runs one round of a 2-member swarm with member 0's and member 1's options; seconds taken.
    static double timedRound(Swarm &s, const AllReduceOptions &first, const AllReduceOptions &second)
    {
        const auto start = std::chrono::steady_clock::now();
        std::thread t0([&] { s.reports[0] = s.endpoints[0]->run("group-1", s.members, 0, s.values[0], first); });
        std::thread t1([&] { s.reports[1] = s.endpoints[1]->run("group-1", s.members, 1, s.values[1], second); });
        t0.join();
        t1.join();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

private Q_SLOTS:
    // The upload cap: a member with a 2 MB/s token bucket sends its PARTs and
    // RESULTs (4 MB here) at that rate, within 10%; the uncapped member is not held back more
    // than waiting for it requires, and the average is still exact.
    void uploadCapBoundsTheSendingRate()
    {
        Swarm s({true, true}, {1.0, 1.0}, 1'000'000);
        const auto expected = s.expectedAverage({0, 1});
        const double rate = 2e6;
        TokenBucket bucket(rate, 64 * 1024);
        (void)bucket.reserve(64 * 1024); // start empty: measure the rate, not the burst
        AllReduceOptions capped, free;
        capped.upload = &bucket;
        capped.partElements = free.partElements = 32 * 1024;
        const double seconds = timedRound(s, capped, free);
        const double sent = 2.0 * static_cast<double>(s.reports[0].shardSizes[1] * 4); // parts + results, bytes
        const double measured = sent / seconds;
        qInfo("capped member sent %.0f bytes in %.3f s: %.3f MB/s (cap %.3f MB/s)", sent, seconds, measured / 1e6, rate / 1e6);
        QVERIFY(s.reports[0].complete && s.reports[1].complete);
        QVERIFY(std::abs(measured - rate) <= 0.1 * rate);
        // Each member measures its own upload: the capped one's is its cap (the kernel saw a
        // link idle between parts), the other's is faster or too quick to tell on loopback.
        QCOMPARE(s.reports[0].uploadBytesPerSecond, rate);
        QVERIFY(s.reports[1].uploadBytesPerSecond < 0 || s.reports[1].uploadBytesPerSecond > 2 * rate);
        for (std::size_t k = 0; k < expected.size(); k += 997)
            QVERIFY(std::abs(s.values[0][k] - expected[k]) <= 1e-6 * (1.0 + std::abs(expected[k])));
    }

    // Timeouts count from the last progress: member 0 reduces no shard (share 0) and its upload
    // is capped at 200 kB/s, so its 800 kB of PARTs to members 1 and 2 take about 4 s, far beyond
    // the 1 s sender and 1.5 s reducer timeouts; but a part leaves every 0.16 s and the others'
    // RESULTs stream back as its parts arrive: nobody is excluded and the round completes with
    // identical values. The hard limit still ends it: with roundTimeout 1 s the same round stops
    // within it (plus one part's wait for the cap), member 0 excluded from the late parts.
    void slowSenderThatKeepsDeliveringIsWaitedFor()
    {
        for (const double limit : {900.0, 1.0}) {
            Swarm s({true, true, true}, {1.0, 1.0, 1.0}, 200'000);
            const std::int64_t shares[] = {0, 1, 1};
            for (std::size_t i = 0; i < 3; ++i)
                s.members[i].share = shares[i];
            TokenBucket bucket(200e3, 32 * 1024);
            (void)bucket.reserve(32 * 1024);
            std::vector<AllReduceOptions> o(3);
            for (auto &x : o) {
                x.partElements = 8192;
                x.senderTimeout = 1.0;
                x.reducerTimeout = 1.5;
                x.roundTimeout = limit;
            }
            o[0].upload = &bucket;
            const auto start = std::chrono::steady_clock::now();
            std::vector<std::thread> threads;
            for (std::size_t i = 0; i < 3; ++i)
                threads.emplace_back([&, i] { s.reports[i] = s.endpoints[i]->run("group-1", s.members, i, s.values[i], o[i]); });
            for (auto &t : threads)
                t.join();
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            qInfo("round limit %.0f s: took %.2f s, complete %d/%d/%d", limit, seconds, s.reports[0].complete,
                  s.reports[1].complete, s.reports[2].complete);
            if (limit > 100.0) {
                QVERIFY2(seconds > 3.0, qPrintable(QString::number(seconds))); // the cap held it back
                for (std::size_t i = 0; i < 3; ++i) {
                    QVERIFY(s.reports[i].complete);
                    QVERIFY(s.reports[i].excludedSenders.empty());
                    QVERIFY(bitwiseEqual(s.values[0], s.values[i]));
                }
            } else {
                QVERIFY2(seconds < 3.0, qPrintable(QString::number(seconds))); // not the 4 s of the transfer
                for (std::size_t i : {1, 2}) {
                    QVERIFY(!s.reports[i].complete);
                    QCOMPARE(s.reports[i].excludedSenders, std::vector<std::uint32_t>{0});
                }
                // The reducers returned every part, averaged without member 0 where its part was
                // late: all three still hold the same values.
                QVERIFY(bitwiseEqual(s.values[0], s.values[1]) && bitwiseEqual(s.values[0], s.values[2]));
            }
        }
    }

    // The download cap: a member with a 2 MB/s download bucket receives the other's PARTs and
    // RESULTs (4 MB) at that rate, within 10%.
    void downloadCapBoundsTheReceivingRate()
    {
        Swarm s({true, true}, {1.0, 1.0}, 1'000'000);
        const auto expected = s.expectedAverage({0, 1});
        const double rate = 2e6;
        TokenBucket bucket(rate, 64 * 1024);
        (void)bucket.reserve(64 * 1024);
        AllReduceOptions capped, free;
        capped.download = &bucket;
        capped.partElements = free.partElements = 32 * 1024;
        const double seconds = timedRound(s, capped, free);
        const double received = 2.0 * static_cast<double>(s.reports[0].shardSizes[0] * 4); // parts + results, bytes
        const double measured = received / seconds;
        qInfo("capped member received %.0f bytes in %.3f s: %.3f MB/s (cap %.3f MB/s)", received, seconds, measured / 1e6,
              rate / 1e6);
        QVERIFY(s.reports[0].complete && s.reports[1].complete);
        QVERIFY(std::abs(measured - rate) <= 0.1 * rate);
        for (std::size_t k = 0; k < expected.size(); k += 997)
            QVERIFY(std::abs(s.values[0][k] - expected[k]) <= 1e-6 * (1.0 + std::abs(expected[k])));
    }

    void weightedAverageWithoutCompression()
    {
        Swarm s({true, true, true}, {1.0, 2.0, 3.0}, 10007);
        const auto expected = s.expectedAverage({0, 1, 2});
        AllReduceOptions o;
        o.partElements = 1000; // several parts per shard
        s.run(o, {0, 1, 2});
        for (std::size_t i = 0; i < 3; ++i) {
            QVERIFY(s.reports[i].complete);
            QCOMPARE(s.reports[i].receivedFraction, 1.0);
            QCOMPARE(s.reports[i].minShardWeight, 6.0); // every shard averaged all three
            for (std::size_t k = 0; k < expected.size(); ++k)
                QVERIFY(std::abs(s.values[i][k] - expected[k]) <= 1e-6 * (1.0 + std::abs(expected[k])));
        }
        QVERIFY(bitwiseEqual(s.values[0], s.values[1]));
        QVERIFY(bitwiseEqual(s.values[0], s.values[2]));
    }

    // A member that sends weight 0 (paused, training nothing, or taking a copied state) puts no
    // values on the wire: its PARTs carry an empty payload, which reducers take as zeros, and it
    // still receives every RESULT. Member 2 reduces a shard: all it uploads is that shard's
    // results to the two others; member 0 uploads its values to two reducers and its results.
    void weightlessMemberSendsNoValuesAndReceivesTheAverage()
    {
        Swarm s({true, true, true}, {1.0, 3.0, 1.0}, 30011);
        const auto expected = s.expectedAverage({0, 1}); // member 2 sends weight 0
        TokenBucket buckets[3];
        std::vector<AllReduceOptions> o(3);
        for (std::size_t i = 0; i < 3; ++i)
            o[i].upload = &buckets[i];
        o[2].myWeight = 0.0;
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < 3; ++i)
            threads.emplace_back(
                [&, i] { s.reports[i] = s.endpoints[i]->run("group-1", s.members, i, s.values[i], o[i]); });
        for (auto &t : threads)
            t.join();
        const auto shard = [&](std::size_t j) { return static_cast<std::uint64_t>(s.reports[0].shardSizes[j]) * 4; };
        QCOMPARE(buckets[2].bytesTaken(), 2 * shard(2));
        QCOMPARE(buckets[0].bytesTaken(), shard(1) + shard(2) + 2 * shard(0));
        for (std::size_t i = 0; i < 3; ++i) {
            QVERIFY(s.reports[i].complete);
            QCOMPARE(s.reports[i].minShardWeight, 4.0);
            QVERIFY(closeTo(s.values[i], expected, 0, expected.size()));
        }
        QVERIFY(bitwiseEqual(s.values[0], s.values[2]));
    }

    void compressedRoundStaysIdenticalAcrossMembers_data()
    {
        QTest::addColumn<int>("codec");
        QTest::addColumn<double>("tolerance");
        // RMS error of the average of N(0, 1) vectors; each codec quantises twice (sender, reducer).
        QTest::newRow("fp16") << int(Compression::Fp16) << 1e-3;
        QTest::newRow("blockwise 8-bit") << int(Compression::Blockwise8Bit) << 0.02;
        QTest::newRow("uniform 8-bit") << int(Compression::Uniform8Bit) << 0.03;
    }

    void compressedRoundStaysIdenticalAcrossMembers()
    {
        QFETCH(int, codec);
        QFETCH(double, tolerance);
        Swarm s({true, true, true, true}, {4.0, 1.0, 1.0, 2.0}, 50000);
        const auto expected = s.expectedAverage({0, 1, 2, 3});
        AllReduceOptions o;
        o.codec = static_cast<Compression>(codec);
        o.partElements = 4096;
        s.run(o, {0, 1, 2, 3});
        double sumSq = 0.0;
        for (std::size_t k = 0; k < expected.size(); ++k)
            sumSq += (s.values[0][k] - expected[k]) * (s.values[0][k] - expected[k]);
        const double rms = std::sqrt(sumSq / static_cast<double>(expected.size()));
        qInfo("%s: RMS error %.2e", QTest::currentDataTag(), rms);
        QVERIFY2(rms < tolerance, qPrintable(QString::number(rms)));
        for (std::size_t i = 1; i < 4; ++i)
            QVERIFY(bitwiseEqual(s.values[0], s.values[i]));
    }

    // Shards follow the leader's shares, not the bandwidths every member also holds: with equal
    // bandwidths and shares 3 : 1 : 0, 9000 elements split 6750 / 2250 / 0 on every member.
    void theLeadersSharesDecideTheShards()
    {
        Swarm s({true, true, true}, {1.0, 1.0, 1.0}, 9000);
        const std::int64_t shares[] = {3, 1, 0};
        for (std::size_t i = 0; i < 3; ++i)
            s.members[i].share = shares[i];
        const auto expected = s.expectedAverage({0, 1, 2});
        s.run(AllReduceOptions{}, {0, 1, 2});
        for (std::size_t i = 0; i < 3; ++i) {
            QCOMPARE(s.reports[i].shardSizes, (std::vector<std::int64_t>{6750, 2250, 0}));
            QVERIFY(s.reports[i].complete);
            QVERIFY(closeTo(s.values[i], expected, 0, expected.size()));
        }
        QVERIFY(bitwiseEqual(s.values[0], s.values[2]));
    }

    void clientModeAndAuxiliaryPeers()
    {
        // 0, 1 trainers; 2 client mode (no ROUTER: reduces nothing); 3 auxiliary (weight 0).
        Swarm s({true, true, false, true}, {2.0, 1.0, 5.0, 0.0}, 9000);
        const auto expected = s.expectedAverage({0, 1, 2});
        s.run(AllReduceOptions{}, {0, 1, 2, 3});
        QCOMPARE(s.reports[0].shardSizes[2], std::int64_t{0});
        QVERIFY(s.reports[0].shardSizes[3] > 0); // the auxiliary peer reduces a shard
        for (std::size_t i : {0, 1, 2}) {
            QVERIFY(s.reports[i].complete);
            for (std::size_t k = 0; k < expected.size(); ++k)
                QVERIFY(std::abs(s.values[i][k] - expected[k]) <= 1e-6 * (1.0 + std::abs(expected[k])));
        }
        QVERIFY(bitwiseEqual(s.values[0], s.values[2]));
        QCOMPARE(s.reports[3].myShardWeight, 8.0);
        for (std::size_t i : {0, 1, 2, 3})
            QCOMPARE(s.reports[i].minShardWeight, 8.0);
        // Senders that all send weight 0 leave every shard without weight: a member must not
        // take such a result for an average (a monitor keeps a state round's only when > 0).
        Swarm zero({true, true}, {1.0, 1.0}, 3000);
        AllReduceOptions o;
        o.myWeight = 0.0;
        zero.run(o, {0, 1});
        QVERIFY(zero.reports[0].complete);
        QCOMPARE(zero.reports[0].minShardWeight, 0.0);
    }

    void silentMemberIsExcludedWithinTheTimeouts()
    {
        // Member 2 never shows up: as a sender it is excluded from the others' shards (weights
        // renormalised over 0 and 1); as a reducer its shard stays at each member's local values.
        Swarm s({true, true, true}, {1.0, 3.0, 2.0}, 6000);
        const auto local0 = s.values[0], local1 = s.values[1];
        const auto expected = s.expectedAverage({0, 1});
        AllReduceOptions o;
        o.senderTimeout = 0.5;
        o.reducerTimeout = 1.0;
        const auto started = std::chrono::steady_clock::now();
        s.run(o, {0, 1});
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        // Not a speed test: it proves the round ends on the 0.5/1 s timeouts given here, not on
        // the 15/30 s defaults or never; the slack absorbs a loaded machine.
        QVERIFY2(seconds < 5.0, qPrintable(QString::number(seconds)));
        const auto &shards = s.reports[0].shardSizes;
        const std::size_t silentBegin = static_cast<std::size_t>(shards[0] + shards[1]);
        for (std::size_t i : {0, 1}) {
            QVERIFY(!s.reports[i].complete);
            QCOMPARE(s.reports[i].excludedSenders, std::vector<std::uint32_t>{2});
            QVERIFY(s.reports[i].receivedFraction < 1.0);
        }
        for (std::size_t k = 0; k < silentBegin; ++k) {
            QVERIFY(std::abs(s.values[0][k] - expected[k]) <= 1e-6 * (1.0 + std::abs(expected[k])));
            QCOMPARE(s.values[0][k], s.values[1][k]);
        }
        for (std::size_t k = silentBegin; k < local0.size(); ++k) {
            QCOMPARE(s.values[0][k], local0[k]);
            QCOMPARE(s.values[1][k], local1[k]);
        }
    }

    // Every link CurveZMQ (open run): the same weighted average, bitwise equal on every member,
    // client mode and auxiliary roles included; a plaintext stranger's messages never arrive.
    void encryptedRoundGivesTheSameAverage()
    {
        auto ids = identities(4);
        std::vector<std::shared_ptr<DataPlaneSecurity>> security;
        for (const auto &id : ids)
            security.push_back(std::make_shared<DataPlaneSecurity>(id, AccessPolicy{}));
        Swarm s({true, true, false, true}, {2.0, 1.0, 5.0, 0.0}, 20000, security, ids);
        const auto expected = s.expectedAverage({0, 1, 2});
        // A plaintext DEALER cannot even complete the handshake with a CURVE ROUTER.
        zmq::context_t ctx;
        zmq::socket_t plain(ctx, zmq::socket_type::dealer);
        plain.set(zmq::sockopt::linger, 0);
        plain.connect(s.members[0].endpoint);
        const std::string bogus = "\xa1\x61g\x67group-1";
        plain.send(zmq::buffer(bogus), zmq::send_flags::dontwait);
        AllReduceOptions o;
        o.partElements = 3000;
        s.run(o, {0, 1, 2, 3});
        for (std::size_t i : {0, 1, 2}) {
            QVERIFY(s.reports[i].complete);
            QVERIFY(closeTo(s.values[i], expected, 0, expected.size()));
        }
        QVERIFY(bitwiseEqual(s.values[0], s.values[1]));
        QVERIFY(bitwiseEqual(s.values[0], s.values[2]));
        QCOMPARE(s.reports[3].myShardWeight, 8.0);
    }

    // A member that connects with another key than the one the group lists for it: the reducer
    // refuses its PARTs (the connection is not that member's), and it cannot reach that member's
    // ROUTER either (the server key does not match). The honest members average without it.
    void impostorKeyIsRefused()
    {
        auto ids = identities(3);
        const auto impostor = PeerIdentity::generate();
        std::vector<std::shared_ptr<DataPlaneSecurity>> security{
            std::make_shared<DataPlaneSecurity>(ids[0], AccessPolicy{}),
            std::make_shared<DataPlaneSecurity>(ids[1], AccessPolicy{}),
            std::make_shared<DataPlaneSecurity>(impostor, AccessPolicy{})}; // listed as ids[2]
        Swarm s({true, true, true}, {1.0, 3.0, 2.0}, 6000, security, ids);
        const auto expected = s.expectedAverage({0, 1});
        AllReduceOptions o;
        o.senderTimeout = 0.5;
        o.reducerTimeout = 1.0;
        s.run(o, {0, 1, 2});
        const auto &shards = s.reports[0].shardSizes;
        const auto honestEnd = static_cast<std::size_t>(shards[0] + shards[1]);
        for (std::size_t i : {0, 1}) {
            QCOMPARE(s.reports[i].excludedSenders, std::vector<std::uint32_t>{2});
            QVERIFY(s.reports[i].receivedFraction < 1.0); // shard 2's results never came
            QVERIFY(closeTo(s.values[i], expected, 0, honestEnd));
        }
    }

    // Closed run: members 0 and 1 present tokens signed by the lead for their own keys; member
    // 2's token is expired. Its handshakes with 0 and 1 are refused (it is excluded as a sender
    // and receives nothing), and 0 and 1 do not hand their gradients to it as a reducer either:
    // its shard keeps their local values.
    void closedRunRefusesAPeerWithoutAValidToken()
    {
        auto ids = identities(3);
        const auto lead = minisign::generateKeyPair();
        const std::string run = "closed-allreduce";
        AccessPolicy policy;
        policy.closed = true;
        policy.lead = lead.publicKey;
        policy.runId = run;
        std::vector<std::shared_ptr<DataPlaneSecurity>> security;
        for (const auto &id : ids)
            security.push_back(std::make_shared<DataPlaneSecurity>(id, policy));
        const auto now = unixSeconds();
        const std::vector<std::string> tokens{
            issueAccessToken(lead.secretKey, run, ids[0].publicKey(), "zero", now - 60, now + 3600),
            issueAccessToken(lead.secretKey, run, ids[1].publicKey(), "one", now - 60, now + 3600),
            issueAccessToken(lead.secretKey, run, ids[2].publicKey(), "two", now - 7200, now - 3600)}; // expired
        // What the swarm does with the tokens in progress records: every member checks every other's.
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t j = 0; j < 3; ++j)
                if (i != j)
                    QCOMPARE(security[i]->admitRecord(ids[j].publicKey(), tokens[j]), j != 2);
        QVERIFY(security[0]->admission(ids[1].publicKey()).empty());
        QVERIFY(QString::fromStdString(security[0]->admission(ids[2].publicKey())).contains(QStringLiteral("no access token")));
        Swarm s({true, true, true}, {1.0, 3.0, 2.0}, 6000, security, ids);
        const auto expected = s.expectedAverage({0, 1});
        const auto local = s.values;
        AllReduceOptions o;
        o.senderTimeout = 0.5;
        o.reducerTimeout = 1.0;
        s.run(o, {0, 1, 2});
        const auto &shards = s.reports[0].shardSizes;
        const auto honestEnd = static_cast<std::size_t>(shards[0] + shards[1]);
        const auto &local2 = local[2];
        for (std::size_t i : {0, 1}) {
            QCOMPARE(s.reports[i].excludedSenders, std::vector<std::uint32_t>{2});
            QVERIFY(!s.reports[i].complete);
            QVERIFY(closeTo(s.values[i], expected, 0, honestEnd));
            QVERIFY(std::equal(s.values[i].begin() + static_cast<std::ptrdiff_t>(honestEnd), s.values[i].end(),
                               local[i].begin() + static_cast<std::ptrdiff_t>(honestEnd)));
        }
        // The refused member received nothing: outside its own shard it keeps its local values.
        QCOMPARE(s.reports[2].receivedFraction, 0.0);
        QVERIFY(std::equal(s.values[2].begin(), s.values[2].begin() + static_cast<std::ptrdiff_t>(honestEnd), local2.begin()));
    }

    // A member that sends invalid data on its own authenticated links is named as the offender,
    // so that the swarm can strike it (averaging/BanList.h): member 2 here is hand-written. As a
    // sender it sends NaN PARTs to reducers 0 and 1; as reducer of shard 2 it answers their
    // PARTs with NaN RESULTs. Both honest members drop all of it, name member 2 with every
    // message counted, average shards 0 and 1 without it and keep shard 2 at local values.
    void invalidDataNamesTheOffendingMember()
    {
        auto ids = identities(3);
        std::vector<std::shared_ptr<DataPlaneSecurity>> security{
            std::make_shared<DataPlaneSecurity>(ids[0], AccessPolicy{}),
            std::make_shared<DataPlaneSecurity>(ids[1], AccessPolicy{})};
        Swarm s({true, true, true}, {1.0, 3.0, 2.0}, 6000, security, ids);
        const auto expected = s.expectedAverage({0, 1});
        const auto local = s.values;
        constexpr std::size_t PartElements = 1000, ShardElements = 2000; // 3 equal shards of 2 parts
        const std::vector<float> poison(PartElements, std::numeric_limits<float>::quiet_NaN());

        // The rogue member 2: its own CURVE ROUTER (as the group lists it) and DEALERs to 0 and 1.
        RogueMember rogue(ids[2], "group-1", 2, 3, ShardElements, PartElements);
        s.members[2].endpoint = rogue.endpoint();
        std::vector<RoguePart> parts;
        for (std::uint32_t j = 0; j < 2; ++j) {
            rogue.connect(j, s.members[j].endpoint, ids[j].publicKey());
            for (std::uint32_t p = 0; p < 2; ++p)
                parts.push_back({j, p, 2, p * PartElements, poison, 2.0, {}});
        }
        rogue.start(parts, RogueAnswer{std::numeric_limits<float>::quiet_NaN(), 6.0});
        AllReduceOptions o;
        o.partElements = PartElements;
        o.senderTimeout = 1.0;
        o.reducerTimeout = 1.5;
        s.run(o, {0, 1});
        rogue.stop();
        for (std::size_t i : {0, 1}) {
            const auto &r = s.reports[i];
            QCOMPARE(r.offences.size(), std::size_t(1));
            QCOMPARE(r.offences[0].member, std::size_t(2));
            QCOMPARE(r.offences[0].messages, 4); // 2 PARTs to its shard, 2 RESULTs of shard 2
            QVERIFY2(QString::fromStdString(r.offences[0].reason).contains(QStringLiteral("non-finite")),
                     r.offences[0].reason.c_str());
            QCOMPARE(r.excludedSenders, std::vector<std::uint32_t>{2});
            QVERIFY(closeTo(s.values[i], expected, 0, 2 * ShardElements));
            QVERIFY(std::equal(s.values[i].begin() + 2 * ShardElements, s.values[i].end(),
                               local[i].begin() + 2 * ShardElements));
        }
    }

    void garbageIsDroppedAndTheRoundStillCompletes()
    {
        Swarm s({true, true}, {1.0, 1.0}, 3000);
        const auto expected = s.expectedAverage({0, 1});
        // A stranger sends malformed and hostile messages to member 0 before and during the round.
        zmq::context_t ctx;
        zmq::socket_t intruder(ctx, zmq::socket_type::dealer);
        intruder.set(zmq::sockopt::linger, 0);
        intruder.connect(s.members[0].endpoint);
        const std::vector<std::vector<std::string>> attacks = {
            {"not cbor at all"},
            {std::string("\xa1\x61g\x67group-1", 11), "payload"},            // CBOR map with only a group
            {std::string(2000, 'x'), "oversized header"},
            {"\xff\xff\xff", "", "", "", "too many frames"},
        };
        for (const auto &frames : attacks) {
            std::vector<zmq::message_t> msg;
            for (const auto &f : frames)
                msg.emplace_back(f.data(), f.size());
            zmq::send_multipart(intruder, msg);
        }
        s.run(AllReduceOptions{}, {0, 1});
        for (std::size_t i : {0, 1}) {
            QVERIFY(s.reports[i].complete);
            QVERIFY(s.reports[i].offences.empty()); // a stranger on a plaintext link is nobody in the group
            for (std::size_t k = 0; k < expected.size(); ++k)
                QVERIFY(std::abs(s.values[i][k] - expected[k]) <= 1e-6 * (1.0 + std::abs(expected[k])));
        }
    }
};

QTEST_APPLESS_MAIN(TestAllReduce)
#include "tst_allreduce.moc"
