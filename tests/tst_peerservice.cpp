// A peer's service socket (core/averaging/PeerService.h) against bad input, and state downloads
// from it (core/averaging/StateDownload.h); the ban list (core/averaging/BanList.h).
#include "net/DataPlaneSecurity.h"
#include "security/AccessToken.h"
#include "util/Hash.h"
#include "averaging/BanList.h"
#include "averaging/PeerService.h"
#include "averaging/ServiceClient.h"
#include "averaging/StateDownload.h"
#include "util/Clock.h"

#include <QTest>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

using namespace dedloc;

namespace {

double now() { return unixNow(); }

// Sends raw frames on a fresh DEALER and returns the first reply header type, or "" if none
// came within `timeout` seconds.
std::string rawRequest(zmq::context_t &context, const std::string &endpoint, const std::vector<std::string> &frames,
                       double timeout = 0.5)
{
    zmq::socket_t s(context, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.connect(endpoint);
    for (std::size_t i = 0; i < frames.size(); ++i)
        s.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<int>(timeout * 1000)));
    if (!(item.revents & ZMQ_POLLIN))
        return {};
    std::vector<zmq::message_t> reply;
    (void)zmq::recv_multipart(s, std::back_inserter(reply));
    return parseServiceMessage({reply[0].data<std::uint8_t>(), reply[0].size()}).at("t").get<std::string>();
}

std::string bytes(const std::vector<std::uint8_t> &v) { return {v.begin(), v.end()}; }

const PeerIdentity &peerA()
{
    static const PeerIdentity identity = PeerIdentity::generate();
    return identity;
}

JoinRequest join(const std::string &run, const std::string &schema = "s", const PeerIdentity &who = peerA())
{
    return {run, 4, schema, who.peerId(), "tcp://127.0.0.1:9", -1.0, false, true, who.publicKey()};
}

} // namespace

class TestPeerService final : public QObject {
    Q_OBJECT

    zmq::context_t m_context{1};

private Q_SLOTS:
    void banListCountsStrikesWithinTheWindow()
    {
        BanList bans({3, 60.0, 300.0});
        QVERIFY(!bans.strike("x", "bad", 0.0));
        QVERIFY(!bans.strike("x", "bad", 10.0));
        QVERIFY(!bans.isBanned("x", 10.0));
        QVERIFY(bans.strike("x", "bad", 20.0));
        QVERIFY(bans.isBanned("x", 319.0));
        QVERIFY(!bans.isBanned("x", 321.0)); // bans end
        QVERIFY(!bans.isBanned("y", 20.0));  // per sender
        // Strikes older than the window are forgotten.
        QVERIFY(!bans.strike("z", "bad", 0.0));
        QVERIFY(!bans.strike("z", "bad", 1.0));
        QVERIFY(!bans.strike("z", "bad", 100.0));
        QCOMPARE(bans.strikes("z", 100.0), 1);
    }

    // Each kind of malformed request is refused or dropped, counted as a strike against the
    // connection, and the third bans it: even a valid request then gets no answer. Another
    // connection is still served.
    void malformedRequestsAreRefusedAndBanned_data()
    {
        QTest::addColumn<std::vector<std::string>>("frames");
        QTest::addColumn<QString>("reply"); // "" = dropped without an answer
        QTest::newRow("not CBOR") << std::vector<std::string>{"\xff\xfe garbage"} << QString();
        QTest::newRow("truncated CBOR") << std::vector<std::string>{bytes(encodeServiceMessage("state?", {{"run", "r"}})).substr(0, 5)} << QString();
        QTest::newRow("oversized header") << std::vector<std::string>{std::string(MaxServiceHeaderBytes + 1, 'a')} << QString();
        QTest::newRow("wrong version") << std::vector<std::string>{bytes(nlohmann::json::to_cbor({{"v", ServiceProtocolVersion + 1}, {"t", "state?"}}))} << QString();
        QTest::newRow("unknown type") << std::vector<std::string>{bytes(nlohmann::json::to_cbor({{"v", ServiceProtocolVersion}, {"t", "hello"}}))} << QString();
        QTest::newRow("extra frame") << std::vector<std::string>{bytes(encodeServiceMessage("state?", {{"run", "r"}})), "x"} << QString();
        QTest::newRow("join missing fields") << std::vector<std::string>{bytes(encodeServiceMessage("join", {{"run", "r"}}))}
                                             << QStringLiteral("refuse");
        QTest::newRow("join with a huge epoch") << std::vector<std::string>{bytes(encodeServiceMessage("join", [] {
            auto j = joinToJson(join("r"));
            j["e"] = -5;
            return j;
        }()))} << QStringLiteral("refuse");
        QTest::newRow("join with another peer's key") << std::vector<std::string>{bytes(encodeServiceMessage("join", [] {
            auto j = joinToJson(join("r"));
            const auto other = PeerIdentity::generate();
            j["k"] = toHex(other.publicKey().data(), other.publicKey().size()); // id and key do not match
            return j;
        }()))} << QStringLiteral("refuse");
        QTest::newRow("join with a malformed key") << std::vector<std::string>{bytes(encodeServiceMessage("join", [] {
            auto j = joinToJson(join("r"));
            j["k"] = "not hex";
            return j;
        }()))} << QStringLiteral("refuse");
        QTest::newRow("part of a bad index") << std::vector<std::string>{bytes(encodeServiceMessage("part?", {{"i", "nope"}, {"k", "x"}}))}
                                             << QStringLiteral("refuse");
        QTest::newRow("part of a negative index") << std::vector<std::string>{bytes(encodeServiceMessage("part?", {{"i", "nope"}, {"k", -1}}))}
                                                  << QStringLiteral("refuse");
        QTest::newRow("a reply sent as a request") << std::vector<std::string>{bytes(encodeServiceMessage("accept", {{"d", 1.0}}))}
                                                   << QStringLiteral("refuse");
    }
    void malformedRequestsAreRefusedAndBanned()
    {
        QFETCH(std::vector<std::string>, frames);
        QFETCH(QString, reply);
        PeerService service("r");
        service.setState(std::make_shared<StateSnapshot>(StateSnapshot{3, std::vector<float>(10, 1.0F)}));
        zmq::socket_t s(m_context, zmq::socket_type::dealer);
        s.set(zmq::sockopt::linger, 0);
        s.connect(service.endpoint());
        auto sendAndWait = [&](const std::vector<std::string> &f) {
            for (std::size_t i = 0; i < f.size(); ++i)
                s.send(zmq::buffer(f[i]), i + 1 < f.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
            zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, std::chrono::milliseconds(400));
            if (!(item.revents & ZMQ_POLLIN))
                return std::string();
            std::vector<zmq::message_t> r;
            (void)zmq::recv_multipart(s, std::back_inserter(r));
            return parseServiceMessage({r[0].data<std::uint8_t>(), r[0].size()}).at("t").get<std::string>();
        };
        for (int strike = 0; strike < 3; ++strike)
            QCOMPARE(QString::fromStdString(sendAndWait(frames)), reply);
        // Banned now: a valid request on the same connection is dropped unread.
        QCOMPARE(sendAndWait({bytes(encodeServiceMessage("state?", {{"run", "r"}}))}), std::string());
        // Another connection is served.
        QCOMPARE(rawRequest(m_context, service.endpoint(), {bytes(encodeServiceMessage("state?", {{"run", "r"}}))}),
                 std::string("state"));
    }

    // A join for an unknown run id is refused and counts against the claimed peer id.
    void unknownRunIsRefused()
    {
        PeerService service("run-1");
        service.openGather({4, "s", 3, now() + 10});
        const auto request = bytes(encodeServiceMessage("join", joinToJson(join("run-2"))));
        QCOMPARE(rawRequest(m_context, service.endpoint(), {request}), std::string("refuse"));
        QCOMPARE(service.bans().strikes(peerA().peerId(), now()), 1);
        QVERIFY(service.followers().empty());
        // The right run, the wrong schema: refused, but not a strike (a normal mismatch).
        QCOMPARE(rawRequest(m_context, service.endpoint(), {bytes(encodeServiceMessage("join", joinToJson(join("run-1", "t"))))}),
                 std::string("refuse"));
        QCOMPARE(service.bans().strikes(peerA().peerId(), now()), 1);
        // Right run and schema: accepted.
        QCOMPARE(rawRequest(m_context, service.endpoint(), {bytes(encodeServiceMessage("join", joinToJson(join("run-1"))))}),
                 std::string("accept"));
        QCOMPARE(service.followers().size(), std::size_t(1));
    }

    // A follower that asks again (a new connection after a late accept) is listed as it asks
    // now: its BEGIN must carry the bandwidth it measured since, or it refuses the group.
    void aRetriedJoinReplacesTheFirst()
    {
        PeerService leader("r");
        leader.openGather({4, "s", 3, unixNow() + 30.0});
        auto ask = join("r");
        ask.bandwidth = 10.0;
        QCOMPARE(rawRequest(m_context, leader.endpoint(), {bytes(encodeServiceMessage("join", joinToJson(ask)))}),
                 std::string("accept"));
        ask.bandwidth = 25.0;
        QCOMPARE(rawRequest(m_context, leader.endpoint(), {bytes(encodeServiceMessage("join", joinToJson(ask)))}),
                 std::string("accept"));
        const auto followers = leader.followers();
        QCOMPARE(followers.size(), std::size_t{1});
        QCOMPARE(followers[0].bandwidth, 25.0);
    }

    // BEGIN goes to the followers the group lists as they joined; one that joined after the
    // leader read its followers (or joined again saying otherwise) gets DISBAND, not a BEGIN it
    // would refuse and blame the leader for.
    void aFollowerTheGroupDoesNotListIsDisbanded()
    {
        PeerService leader("r");
        leader.openGather({4, "s", 4, unixNow() + 30.0});
        const auto b = PeerIdentity::generate(), c = PeerIdentity::generate(), e = PeerIdentity::generate();
        std::vector<std::unique_ptr<zmq::socket_t>> sockets;
        for (const auto &request : {join("r"), join("r", "s", b), join("r", "s", c), join("r", "s", e)}) {
            auto &s = *sockets.emplace_back(std::make_unique<zmq::socket_t>(m_context, zmq::socket_type::dealer));
            s.set(zmq::sockopt::linger, 0);
            s.connect(leader.endpoint());
            s.send(zmq::buffer(encodeServiceMessage("join", joinToJson(request))));
        }
        const auto receiveType = [](zmq::socket_t &s) {
            zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, std::chrono::milliseconds(2000));
            if (!(item.revents & ZMQ_POLLIN))
                return std::string("(nothing)");
            zmq::message_t m;
            (void)s.recv(m);
            return parseServiceMessage({m.data<std::uint8_t>(), m.size()}).at("t").get<std::string>();
        };
        for (auto &s : sockets)
            QCOMPARE(receiveType(*s), std::string("accept"));
        // The leader read A, C and E only, and lists C and E otherwise than they joined (as if
        // they had joined again meanwhile: C asking for a repair, E with another bandwidth).
        GroupInfo group{"e4-x", 4, {}};
        for (const auto &r : leader.followers())
            if (r.peerId != b.peerId())
                group.members.push_back({r.peerId, r.allReduceEndpoint, r.peerId == e.peerId() ? 50.0 : r.bandwidth, 1.0,
                                         r.publicKey, 0, r.peerId == c.peerId()});
        QCOMPARE(group.members.size(), std::size_t(3));
        leader.begin(group);
        QCOMPARE(receiveType(*sockets[0]), std::string("begin"));
        for (std::size_t i = 1; i < sockets.size(); ++i)
            QCOMPARE(receiveType(*sockets[i]), std::string("disband"));
    }

    void stateDownloadsInParts()
    {
        PeerService donor("r", "tcp://127.0.0.1:*", 1000);
        std::vector<float> state(4321);
        for (std::size_t i = 0; i < state.size(); ++i)
            state[i] = static_cast<float>(i) * 0.5F - 7.0F;
        donor.setState(std::make_shared<StateSnapshot>(StateSnapshot{12, state}));
        std::atomic<bool> stop{false};
        std::string why;
        const auto s = downloadState({{"donor", donor.endpoint(), 12}}, "r", 10, state.size(), {}, stop, &why);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->epoch, 12L);
        QVERIFY(s->values == state);
        QCOMPARE(donor.served("part?"), 5LL);
    }

    // A client that asks for 300 parts of 512 KiB and reads nothing for a while gets the few the
    // service queued for it (and what the kernels buffered), not 300: the service drops the rest
    // instead of holding 150 MiB for 30-byte requests. It serves the next client as before.
    void aClientThatDoesNotReadCannotQueueRepliesWithoutBound()
    {
        constexpr std::uint64_t Part = 128 * 1024;
        PeerService donor("r", "tcp://127.0.0.1:*", Part);
        donor.setState(std::make_shared<StateSnapshot>(StateSnapshot{3, std::vector<float>(4 * Part, 1.0F)}));
        ServiceClient client(donor.endpoint());
        client.send("state?", {{"run", "r"}});
        const auto offer = client.receive(5.0);
        QVERIFY(offer && offer->header.at("t") == "state");
        const auto id = offer->header.at("i").get<std::string>();
        constexpr int Asked = 300;
        for (int k = 0; k < Asked; ++k)
            client.send("part?", {{"i", id}, {"k", k % 4}});
        for (int waited = 0; donor.served("part?") < Asked && waited < 100; ++waited)
            QTest::qWait(50);
        QCOMPARE(donor.served("part?"), static_cast<long long>(Asked));
        int received = 0;
        while (client.receive(1.0, Part * sizeof(float)))
            ++received;
        qInfo("received %d of %d parts", received, Asked);
        // The queue (8) and the client's (4), plus what the kernel's socket buffers held: tens of
        // parts at most, against all 300 without the bound.
        QVERIFY2(received >= 1 && received <= 100, qPrintable(QString::number(received)));
        std::atomic<bool> stop{false};
        std::string why;
        QVERIFY2(downloadState({{"donor", donor.endpoint(), 3}}, "r", 3, 4 * Part, {}, stop, &why).has_value(),
                 why.c_str());
    }

    // A download keeps its snapshot while it reads it: the donor steps three times (its two
    // newest are then epochs 3 and 4), yet part 1 of the epoch-1 snapshot the download started on
    // is still served, bit for bit. Once nobody has asked for it within the pin time it goes at
    // the donor's next step ("snapshot is gone"); and at most two old snapshots stay pinned.
    void aDownloadKeepsItsSnapshot()
    {
        PeerService donor("r", "tcp://127.0.0.1:*", 10);
        donor.setSnapshotPin(1.0);
        auto snapshotOf = [](long epoch) {
            return std::make_shared<StateSnapshot>(StateSnapshot{epoch, std::vector<float>(20, static_cast<float>(epoch))});
        };
        donor.setState(snapshotOf(1));
        ServiceClient client(donor.endpoint());
        auto ask = [&](const std::string &type, const nlohmann::json &fields) {
            client.send(type, fields);
            const auto reply = client.receive(5.0, 1 << 20);
            return reply ? *reply : ServiceReply{{{"t", "nothing"}}, {}};
        };
        const auto offer = ask("state?", {{"run", "r"}});
        QCOMPARE(offer.header.at("t").get<std::string>(), std::string("state"));
        const auto id = offer.header.at("i").get<std::string>();
        QCOMPARE(ask("part?", {{"i", id}, {"k", 0}}).header.at("t").get<std::string>(), std::string("part"));
        for (long e : {2, 3, 4})
            donor.setState(snapshotOf(e));
        QCOMPARE(donor.stateEpoch(), 4L);
        const auto part = ask("part?", {{"i", id}, {"k", 1}});
        QCOMPARE(part.header.at("t").get<std::string>(), std::string("part"));
        QCOMPARE(part.data.size(), std::size_t(40));
        float first = 0.0F;
        std::memcpy(&first, part.data.data(), sizeof first);
        QCOMPARE(first, 1.0F); // the epoch-1 values, not the newest
        // Unpinned: the download stops asking for longer than the pin; the next step drops it.
        QTest::qWait(1300);
        donor.setState(snapshotOf(5));
        const auto gone = ask("part?", {{"i", id}, {"k", 1}});
        QCOMPARE(gone.header.at("t").get<std::string>(), std::string("refuse"));
        QCOMPARE(gone.header.value("why", std::string()), std::string("snapshot is gone"));
        // Bounded: downloads pin epochs 5, 6 and 7 in turn; after two more steps the donor keeps
        // its two newest (8, 9) and the two newest pinned (6, 7), not epoch 5.
        std::vector<std::string> ids;
        for (long e : {6, 7, 8}) {
            ids.push_back(ask("state?", {{"run", "r"}}).header.at("i").get<std::string>());
            donor.setState(snapshotOf(e));
        }
        donor.setState(snapshotOf(9));
        QCOMPARE(ask("part?", {{"i", ids[0]}, {"k", 0}}).header.at("t").get<std::string>(), std::string("refuse"));
        for (std::size_t k : {1, 2})
            QCOMPARE(ask("part?", {{"i", ids[k]}, {"k", 0}}).header.at("t").get<std::string>(), std::string("part"));
    }

    // A donor offering another layout is refused before anything is allocated; a donor behind
    // the requested epoch is never used; a silent donor times out on lack of progress.
    void badDonorsAreRefused()
    {
        PeerService donor("r");
        donor.setState(std::make_shared<StateSnapshot>(StateSnapshot{5, std::vector<float>(100, 1.0F)}));
        std::atomic<bool> stop{false};
        std::string why;
        QVERIFY(!downloadState({{"d", donor.endpoint(), 5}}, "r", 0, 99, {}, stop, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("state elements")), why.c_str());
        QVERIFY(!downloadState({{"d", donor.endpoint(), 5}}, "r", 6, 100, {}, stop, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("behind")), why.c_str());
        QVERIFY(!downloadState({{"d", donor.endpoint(), 5}}, "other-run", 0, 100, {}, stop, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("unknown run")), why.c_str());

        // Invalid answers strike the donor (a wrong layout, non-finite values); a donor that is
        // merely behind does not. A banned donor is not asked at all.
        BanList bans;
        QVERIFY(!downloadState({{"d", donor.endpoint(), 5}}, "r", 0, 99, {}, stop, &why, nullptr, &bans));
        QCOMPARE(bans.strikes("d", now()), 1);
        QVERIFY(!downloadState({{"d", donor.endpoint(), 5}}, "r", 6, 100, {}, stop, &why, nullptr, &bans));
        QCOMPARE(bans.strikes("d", now()), 1);
        PeerService poisoned("r");
        std::vector<float> nan(100, 1.0F);
        nan[57] = std::numeric_limits<float>::quiet_NaN();
        poisoned.setState(std::make_shared<StateSnapshot>(StateSnapshot{5, nan}));
        QVERIFY(!downloadState({{"p", poisoned.endpoint(), 5}}, "r", 0, 100, {}, stop, &why, nullptr, &bans));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("non-finite")), why.c_str());
        QCOMPARE(bans.strikes("p", now()), 1);
        bans.strike("p", "test", now(), 2); // third strike: banned
        const auto served = poisoned.served("state?");
        QVERIFY(!downloadState({{"p", poisoned.endpoint(), 5}}, "r", 0, 100, {}, stop, &why, nullptr, &bans));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("banned")), why.c_str());
        QCOMPARE(poisoned.served("state?"), served);

        zmq::socket_t silent(m_context, zmq::socket_type::router);
        silent.set(zmq::sockopt::linger, 0);
        silent.bind("tcp://127.0.0.1:*");
        StateDownloadOptions o;
        o.partTimeout = 0.3;
        const auto start = std::chrono::steady_clock::now();
        QVERIFY(!downloadState({{"s", silent.get(zmq::sockopt::last_endpoint), 5}}, "r", 0, 100, o, stop, &why));
        QVERIFY(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("did not answer")), why.c_str());
    }

    // Encrypted service socket (open run): a CURVE client that knows the donor's key downloads
    // the state bit for bit; a plaintext DEALER gets nothing; a join whose key "k" is not the key
    // of the connection it came on (someone else's peer id and key) is refused.
    void encryptedServiceChecksTheJoinersKey()
    {
        const auto donorId = PeerIdentity::generate(), meId = PeerIdentity::generate(), other = PeerIdentity::generate();
        auto donorSecurity = std::make_shared<DataPlaneSecurity>(donorId, AccessPolicy{});
        auto mySecurity = std::make_shared<DataPlaneSecurity>(meId, AccessPolicy{});
        PeerService donor("r", "tcp://127.0.0.1:*", 1000, donorSecurity);
        std::vector<float> state(2500);
        for (std::size_t i = 0; i < state.size(); ++i)
            state[i] = static_cast<float>(i) * 0.25F;
        donor.setState(std::make_shared<StateSnapshot>(StateSnapshot{7, state}));
        std::atomic<bool> stop{false};
        std::string why;
        DonorAdvert advert{donorId.peerId(), donor.endpoint(), 7, donorId.publicKey()};
        const auto s = downloadState({advert}, "r", 7, state.size(), {}, stop, &why, mySecurity);
        QVERIFY2(s.has_value(), why.c_str());
        QVERIFY(s->values == state);
        // A donor advertised with the wrong key (someone else's): the CURVE client refuses the server.
        StateDownloadOptions quick;
        quick.partTimeout = 0.5;
        advert.publicKey = other.publicKey();
        QVERIFY(!downloadState({advert}, "r", 7, state.size(), quick, stop, &why, mySecurity));
        QCOMPARE(donor.served("state?"), 1LL);
        // Plaintext: no answer at all.
        QCOMPARE(rawRequest(m_context, donor.endpoint(), {bytes(encodeServiceMessage("state?", {{"run", "r"}}))}),
                 std::string());
        // Joins: with my own key, accepted; claiming another peer's id and key, refused.
        donor.openGather({4, "s", 3, now() + 10});
        for (const auto *who : {&meId, &other}) {
            ServiceClient client(donor.endpoint(), mySecurity, donorId.publicKey());
            client.send("join", joinToJson(join("r", "s", *who)));
            const auto reply = client.receive(2.0);
            QVERIFY(reply.has_value());
            QCOMPARE(reply->header.at("t").get<std::string>(), std::string(who == &meId ? "accept" : "refuse"));
        }
        QCOMPARE(donor.followers().size(), std::size_t(1));
        QCOMPARE(donor.followers()[0].peerId, meId.peerId());
    }

    // Closed run: the service socket's ZAP handler admits only peers whose token the registry
    // verified. No token, an expired token, and a token issued to another key (rebound) are
    // refused at the handshake, and the client learns it at once instead of timing out.
    void closedServiceRefusesAtTheHandshake()
    {
        const auto lead = minisign::generateKeyPair();
        AccessPolicy policy;
        policy.closed = true;
        policy.lead = lead.publicKey;
        policy.runId = "r";
        const auto leader = PeerIdentity::generate(), good = PeerIdentity::generate(), none = PeerIdentity::generate(),
                   expired = PeerIdentity::generate(), thief = PeerIdentity::generate();
        auto leaderSecurity = std::make_shared<DataPlaneSecurity>(leader, policy);
        const auto t = unixSeconds();
        const auto goodToken = issueAccessToken(lead.secretKey, "r", good.publicKey(), "good", t - 60, t + 3600);
        QVERIFY(leaderSecurity->admitRecord(good.publicKey(), goodToken));
        QVERIFY(!leaderSecurity->admitRecord(none.publicKey(), ""));
        QVERIFY(!leaderSecurity->admitRecord(
            expired.publicKey(), issueAccessToken(lead.secretKey, "r", expired.publicKey(), "old", t - 7200, t - 3600)));
        QVERIFY(!leaderSecurity->admitRecord(thief.publicKey(), goodToken)); // rebound: issued to `good`
        PeerService service("r", "tcp://127.0.0.1:*", 1000, leaderSecurity);
        service.openGather({4, "s", 5, now() + 10});
        for (const auto *who : {&good, &none, &expired, &thief}) {
            auto security = std::make_shared<DataPlaneSecurity>(*who, policy);
            ServiceClient client(service.endpoint(), security, leader.publicKey());
            client.send("join", joinToJson(join("r", "s", *who)));
            const auto started = std::chrono::steady_clock::now();
            const auto reply = client.receive(5.0);
            const bool admitted = who == &good;
            QCOMPARE(reply.has_value(), admitted);
            QCOMPARE(client.refusedAtHandshake(), !admitted);
            // Not a speed test: a refusal is reported by the handshake, not by the 5 s timeout.
            QVERIFY(std::chrono::steady_clock::now() - started < std::chrono::seconds(4));
        }
        QCOMPARE(service.followers().size(), std::size_t(1));
        QCOMPARE(service.followers()[0].peerId, good.peerId());
    }

    // BEGIN carries every member's key beside its id: a key that is not that member's, or none,
    // refuses the whole message (a leader cannot pair an endpoint with another peer's key).
    void beginChecksEveryMembersKey()
    {
        const auto a = PeerIdentity::generate(), b = PeerIdentity::generate();
        const GroupInfo group{"g1", 3, {{a.peerId(), "tcp://127.0.0.1:1", 1.0, 1.0, a.publicKey(), ShardShareTotal},
                                        {b.peerId(), "tcp://127.0.0.1:2", 1.0, 0.0, b.publicKey()}}};
        auto j = groupToJson(group);
        const auto parsed = groupFromJson(j);
        QVERIFY(parsed.members[0].publicKey == a.publicKey());
        QVERIFY(parsed.members[1].publicKey == b.publicKey());
        j["m"][1]["k"] = toHex(a.publicKey().data(), a.publicKey().size());
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)groupFromJson(j));
        j["m"][1].erase("k");
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)groupFromJson(j));
    }

    void donorsAreRankedByEpochAndNeverBehind()
    {
        std::vector<DonorAdvert> donors{{"a", "tcp://a:1", 3}, {"b", "tcp://b:1", 9}, {"c", "tcp://c:1", 7}, {"d", "tcp://d:1", 9}};
        std::map<std::string, int> firstPick;
        for (int i = 0; i < 200; ++i) {
            const auto ranked = rankDonors(donors, 7);
            QCOMPARE(ranked.size(), std::size_t(3)); // "a" is behind epoch 7
            QCOMPARE(ranked[0].epoch, 9L);
            QCOMPARE(ranked[1].epoch, 9L);
            QCOMPARE(ranked[2].peerId, std::string("c"));
            ++firstPick[ranked[0].peerId];
        }
        // Ties are broken at random, spreading joiners over donors.
        QVERIFY(firstPick["b"] > 50 && firstPick["d"] > 50);
    }
};

QTEST_GUILESS_MAIN(TestPeerService)
#include "tst_peerservice.moc"
