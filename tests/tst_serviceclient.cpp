// The requesting side of a service socket (core/averaging/ServiceClient.h): against a real
// PeerService on loopback, and against a hand-made ROUTER that answers garbage, wrong sizes or
// nothing. Malformed replies are dropped and the client keeps waiting, never past its timeout.
#include "TestSupport.h"
#include "averaging/PeerService.h"
#include "averaging/ServiceClient.h"
#include "net/DataPlaneSecurity.h"
#include "security/AccessToken.h"
#include "util/Error.h"
#include "util/Log.h"

#include <QTest>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

using namespace dedloc;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

using Frames = std::vector<std::string>;

std::string bytes(const std::vector<std::uint8_t> &v)
{
    return {v.begin(), v.end()};
}
std::string header(const std::string &type, const json &fields = json::object())
{
    return bytes(encodeServiceMessage(type, fields));
}

// A ROUTER that plays a peer's service socket by hand.
class FakeServer {
  public:
    explicit FakeServer(zmq::context_t &context) : m_router(context, zmq::socket_type::router)
    {
        m_router.set(zmq::sockopt::linger, 0);
        m_router.bind("tcp://127.0.0.1:*");
    }
    [[nodiscard]] std::string endpoint() const { return m_router.get(zmq::sockopt::last_endpoint); }

    // The next request's frames after the routing id (which is kept for replies); empty if none
    // came within `timeout` seconds.
    Frames request(double timeout = 2.0)
    {
        zmq::pollitem_t item{m_router.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<int>(timeout * 1000)));
        if (!(item.revents & ZMQ_POLLIN))
            return {};
        std::vector<zmq::message_t> frames;
        (void)zmq::recv_multipart(m_router, std::back_inserter(frames));
        m_client = frames.at(0).to_string();
        Frames out;
        for (std::size_t i = 1; i < frames.size(); ++i)
            out.push_back(frames[i].to_string());
        return out;
    }
    void reply(const Frames &frames)
    {
        m_router.send(zmq::buffer(m_client), zmq::send_flags::sndmore);
        for (std::size_t i = 0; i < frames.size(); ++i)
            m_router.send(zmq::buffer(frames[i]),
                          i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }

  private:
    zmq::socket_t m_router;
    std::string m_client;
};

// An endpoint on which nothing listens (a port that was just free).
std::string deadEndpoint(zmq::context_t &context)
{
    zmq::socket_t s(context, zmq::socket_type::router);
    s.set(zmq::sockopt::linger, 0);
    s.bind("tcp://127.0.0.1:*");
    const auto endpoint = s.get(zmq::sockopt::last_endpoint);
    s.close();
    return endpoint;
}

std::string floats(std::initializer_list<float> values)
{
    std::string out(values.size() * sizeof(float), '\0');
    std::memcpy(out.data(), values.begin(), out.size());
    return out;
}

} // namespace

class TestServiceClient final : public QObject {
    Q_OBJECT

    zmq::context_t m_context{1};
    std::mutex m_logMutex;
    std::vector<std::string> m_dropped; // "dropped a reply" warnings since init()

private Q_SLOTS:
    void init()
    {
        m_dropped.clear();
        log::setSink([this](log::Level level, std::string_view category, std::string_view message) {
            std::lock_guard lock(m_logMutex);
            if (level == log::Level::Warning && category == "service" && message.starts_with("dropped a reply: "))
                m_dropped.emplace_back(message);
        });
    }
    void cleanup() { log::setSink(nullptr); }

    // One frame: a CBOR header with the protocol version, the type and the fields.
    void sendsOneVersionedHeader()
    {
        FakeServer server(m_context);
        ServiceClient client(server.endpoint());
        client.send("part?", {{"i", "7-1"}, {"k", 3}});
        const auto request = server.request();
        QCOMPARE(request.size(), std::size_t(1));
        const auto m =
            parseServiceMessage({reinterpret_cast<const std::uint8_t *>(request[0].data()), request[0].size()});
        QCOMPARE(m.at("t").get<std::string>(), std::string("part?"));
        QCOMPARE(m.at("v").get<int>(), ServiceProtocolVersion);
        QCOMPARE(m.at("i").get<std::string>(), std::string("7-1"));
        QCOMPARE(m.at("k").get<int>(), 3);
    }

    // A real service: layout, a part's values, a refusal, and a part larger than the caller
    // allows, which is dropped.
    void talksToAPeerService()
    {
        PeerService service("r", "tcp://127.0.0.1:*", 4);
        std::vector<float> state(10);
        for (std::size_t i = 0; i < state.size(); ++i)
            state[i] = 0.5F + static_cast<float>(i);
        service.setState(std::make_shared<StateSnapshot>(StateSnapshot{6, state}));
        ServiceClient client(service.endpoint());

        client.send("state?", {{"run", "r"}});
        const auto info = client.receive(5.0);
        QVERIFY(info.has_value());
        QCOMPARE(info->header.at("t").get<std::string>(), std::string("state"));
        const auto s = stateInfoFromJson(info->header, 10);
        QCOMPARE(s.epoch, 6L);
        QCOMPARE(s.parts, 3U);
        QCOMPARE(s.partElements, std::uint64_t{4});
        QVERIFY(info->data.empty());

        client.send("part?", {{"i", s.snapshotId}, {"k", 2}}); // the last part: 2 values
        const auto part = client.receive(5.0, 2 * sizeof(float));
        QVERIFY(part.has_value());
        QCOMPARE(part->header.at("k").get<int>(), 2);
        QCOMPARE(part->data.size(), 2 * sizeof(float));
        float last[2];
        std::memcpy(last, part->data.data(), sizeof(last));
        QCOMPARE(last[0], 8.5F);
        QCOMPARE(last[1], 9.5F);

        client.send("part?", {{"i", s.snapshotId}, {"k", 0}}); // 16 bytes, 15 allowed
        QVERIFY(!client.receive(0.5, 4 * sizeof(float) - 1).has_value());
        {
            std::lock_guard lock(m_logMutex);
            QCOMPARE(m_dropped.size(), std::size_t(1));
            QVERIFY2(m_dropped[0].find("reply data of 16 bytes exceeds 15") != std::string::npos, m_dropped[0].c_str());
        }

        client.send("state?", {{"run", "another run"}});
        const auto refusal = client.receive(5.0);
        QVERIFY(refusal.has_value());
        QCOMPARE(refusal->header.at("t").get<std::string>(), std::string("refuse"));
        QCOMPARE(refusal->header.at("why").get<std::string>(), std::string("unknown run"));
    }

    // Each malformed reply is dropped and the client keeps waiting: it returns the well-formed
    // reply that follows, then nothing.
    void malformedRepliesAreDropped_data()
    {
        QTest::addColumn<Frames>("bad");
        QTest::addColumn<qulonglong>("maxData");
        QTest::addColumn<QString>("reason"); // logged with the drop
        const auto valid = header("accept", {{"d", 1.0}});
        QTest::newRow("not CBOR") << Frames{"\xff\xfe garbage"} << 0ULL << QStringLiteral("not a CBOR map");
        QTest::newRow("empty frame") << Frames{""} << 0ULL << QStringLiteral("not a CBOR map");
        QTest::newRow("truncated CBOR") << Frames{valid.substr(0, valid.size() / 2)} << 0ULL
                                        << QStringLiteral("not a CBOR map");
        QTest::newRow("CBOR array") << Frames{bytes(json::to_cbor(json::array({1, 2})))} << 0ULL
                                    << QStringLiteral("not a CBOR map");
        QTest::newRow("oversized header")
            << Frames{header("accept", {{"pad", std::string(MaxServiceHeaderBytes, 'x')}})} << 0ULL
            << QStringLiteral("exceeds 16384");
        QTest::newRow("wrong version") << Frames{bytes(json::to_cbor({{"v", 1}, {"t", "accept"}}))} << 0ULL
                                       << QStringLiteral("version 1 is not %1").arg(ServiceProtocolVersion);
        QTest::newRow("unknown type") << Frames{bytes(json::to_cbor({{"v", ServiceProtocolVersion}, {"t", "hello"}}))} << 0ULL
                                      << QStringLiteral("unknown service message \"hello\"");
        QTest::newRow("three frames") << Frames{valid, "a", "b"} << 100ULL << QStringLiteral("reply has 3 frames");
        QTest::newRow("data beyond the limit") << Frames{header("part"), std::string(17, 'x')} << 16ULL
                                               << QStringLiteral("reply data of 17 bytes exceeds 16");
        QTest::newRow("data when none is expected") << Frames{header("state"), std::string(1, 'x')} << 0ULL
                                                    << QStringLiteral("reply data of 1 bytes exceeds 0");
    }
    void malformedRepliesAreDropped()
    {
        QFETCH(Frames, bad);
        QFETCH(qulonglong, maxData);
        QFETCH(QString, reason);
        FakeServer server(m_context);
        ServiceClient client(server.endpoint());
        client.send("join", {{"run", "r"}});
        QVERIFY(!server.request().empty());
        server.reply(bad);
        server.reply({header("accept", {{"d", 42.0}})});
        const auto r = client.receive(5.0, maxData);
        QVERIFY(r.has_value());
        QCOMPARE(r->header.at("t").get<std::string>(), std::string("accept"));
        QCOMPARE(r->header.at("d").get<double>(), 42.0);
        QVERIFY(!client.receive(0.2, maxData).has_value());
        std::lock_guard lock(m_logMutex);
        QCOMPARE(m_dropped.size(), std::size_t(1));
        QVERIFY2(QString::fromStdString(m_dropped[0]).contains(reason), m_dropped[0].c_str());
    }

    // A data frame of exactly the allowed size, and the empty data frame, are kept.
    void dataUpToTheLimitIsKept()
    {
        FakeServer server(m_context);
        ServiceClient client(server.endpoint());
        client.send("part?", {{"i", "x"}, {"k", 0}});
        QVERIFY(!server.request().empty());
        server.reply({header("part", {{"i", "x"}, {"k", 0}}), floats({1.0F, -2.0F, 3.5F, 0.25F})});
        server.reply({header("part", {{"i", "x"}, {"k", 1}}), std::string()});
        const auto r = client.receive(5.0, 16);
        QVERIFY(r.has_value());
        QCOMPARE(r->data.size(), std::size_t(16));
        QVERIFY(std::memcmp(r->data.data(), floats({1.0F, -2.0F, 3.5F, 0.25F}).data(), 16) == 0);
        const auto empty = client.receive(5.0, 16);
        QVERIFY(empty.has_value());
        QCOMPARE(empty->header.at("k").get<int>(), 1);
        QVERIFY(empty->data.empty());
    }

    // Silence, or nobody listening: nothing, after the timeout and not much later.
    void silenceEndsAtTheTimeout()
    {
        FakeServer silent(m_context);
        for (const auto &endpoint : {silent.endpoint(), deadEndpoint(m_context)}) {
            ServiceClient client(endpoint);
            client.send("state?", {{"run", "r"}});
            const auto start = Clock::now();
            QVERIFY(!client.receive(0.3).has_value());
            const double waited = secondsSince(start);
            QVERIFY2(waited >= 0.29, qPrintable(QString::number(waited)));
            QVERIFY2(waited < 2.3, qPrintable(QString::number(waited))); // a hang check, not a speed test
            QVERIFY(!client.refusedAtHandshake());
        }
    }

    // A server that floods garbage does not keep the client waiting past its timeout.
    void garbageFloodDoesNotExtendTheTimeout()
    {
        FakeServer server(m_context);
        ServiceClient client(server.endpoint());
        client.send("state?", {{"run", "r"}});
        QVERIFY(!server.request().empty());
        std::atomic<bool> done{false};
        std::thread flood([&] {
            const auto start = Clock::now();
            while (!done.load() && secondsSince(start) < 5.0) {
                server.reply({"\xff garbage"});
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        });
        const auto start = Clock::now();
        const auto r = client.receive(0.3);
        const double waited = secondsSince(start);
        done = true;
        flood.join();
        QVERIFY(!r.has_value());
        QVERIFY2(waited < 2.5, qPrintable(QString::number(waited))); // the flood lasts 5 s
    }

    // Sending never blocks, even with no server and a full queue.
    void sendNeverBlocks()
    {
        ServiceClient client(deadEndpoint(m_context));
        for (int i = 0; i < 3000; ++i)
            client.send("state?", {{"run", "r"}});
        QVERIFY(!client.receive(0.05).has_value());
    }

    // Encrypted (open run): a CURVE client with the server's key is answered; a plaintext one
    // is not, and that is silence, not a refused handshake.
    void encryptedServiceAnswersItsCurveClients()
    {
        const auto serverId = PeerIdentity::generate(), meId = PeerIdentity::generate();
        PeerService service("r", "tcp://127.0.0.1:*", 1000,
                            std::make_shared<DataPlaneSecurity>(serverId, AccessPolicy{}));
        service.setState(std::make_shared<StateSnapshot>(StateSnapshot{2, std::vector<float>(5, 1.0F)}));
        ServiceClient secured(service.endpoint(), std::make_shared<DataPlaneSecurity>(meId, AccessPolicy{}),
                              serverId.publicKey());
        secured.send("state?", {{"run", "r"}});
        const auto r = secured.receive(5.0);
        QVERIFY(r.has_value());
        QCOMPARE(r->header.at("n").get<int>(), 5);
        QVERIFY(!secured.refusedAtHandshake());

        ServiceClient plain(service.endpoint());
        plain.send("state?", {{"run", "r"}});
        QVERIFY(!plain.receive(0.5).has_value());
        QVERIFY(!plain.refusedAtHandshake());
        QCOMPARE(service.served("state?"), 1LL);
    }

    // Closed run, no access token: the handshake is refused and the client says so at once
    // instead of waiting out its timeout.
    void refusedHandshakeEndsTheWait()
    {
        const auto lead = minisign::generateKeyPair();
        AccessPolicy policy;
        policy.closed = true;
        policy.lead = lead.publicKey;
        policy.runId = "r";
        const auto serverId = PeerIdentity::generate(), stranger = PeerIdentity::generate();
        PeerService service("r", "tcp://127.0.0.1:*", 1000, std::make_shared<DataPlaneSecurity>(serverId, policy));
        ServiceClient client(service.endpoint(), std::make_shared<DataPlaneSecurity>(stranger, policy),
                             serverId.publicKey());
        QVERIFY(!client.refusedAtHandshake());
        client.send("state?", {{"run", "r"}});
        const auto start = Clock::now();
        QVERIFY(!client.receive(10.0).has_value());
        QVERIFY(client.refusedAtHandshake());
        QVERIFY(secondsSince(start) < 8.0); // ended by the handshake, not by the 10 s timeout
        QCOMPARE(service.served("state?"), 0LL);
    }

    // A server key that is no Ed25519 public key is refused when the client is made.
    void invalidServerKeyIsRefused()
    {
        const auto me = PeerIdentity::generate();
        auto security = std::make_shared<DataPlaneSecurity>(me, AccessPolicy{});
        const std::array<unsigned char, 32> zero{}; // a point of small order
        const auto error = test::errorOf([&] { ServiceClient client("tcp://127.0.0.1:1", security, zero); });
        QVERIFY2(error.contains(QLatin1String("not a valid Ed25519 public key")), qPrintable(error));
        // Plaintext clients ignore the key.
        ServiceClient plain("tcp://127.0.0.1:1", nullptr, zero);
        QVERIFY(!plain.refusedAtHandshake());
    }
};

QTEST_GUILESS_MAIN(TestServiceClient)
#include "tst_serviceclient.moc"
