// CurveZMQ data plane (core/net/CurveSecurity.h): real ROUTER/DEALER sockets on 127.0.0.1, the
// ZAP handler's decisions seen by the client as handshake events, and a byte-level look at the
// wire through a relay.
#include "net/CurveSecurity.h"
#include "util/Error.h"
#include "util/Log.h"

#include "TestSupport.h"

#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>
#include <zmq.hpp>

#include <atomic>
#include <mutex>
#include <thread>

using namespace dedloc;
namespace ms = dedloc::minisign;

namespace {

constexpr std::int64_t Now = 1'800'000'000;
constexpr int WaitMs = 10000; // hang guard only; events normally arrive within milliseconds
const std::string RunId = "closed-run";

struct Server {
    zmq::context_t context{1};
    std::shared_ptr<AccessTokenRegistry> registry = std::make_shared<AccessTokenRegistry>();
    std::unique_ptr<ZapHandler> zap;
    PeerIdentity identity = PeerIdentity::generate();
    std::unique_ptr<zmq::socket_t> router;
    std::string endpoint;

    Server(bool closed, const ms::PublicKey &lead, bool curve = true)
    {
        AccessPolicy policy;
        policy.closed = closed;
        policy.lead = lead;
        policy.runId = RunId;
        policy.now = [] { return Now; };
        zap = std::make_unique<ZapHandler>(context, policy, registry);
        router = std::make_unique<zmq::socket_t>(context, zmq::socket_type::router);
        router->set(zmq::sockopt::linger, 0);
        if (curve)
            configureCurveServer(*router, curveKeyPairOf(identity));
        router->bind("tcp://127.0.0.1:*");
        endpoint = router->get(zmq::sockopt::last_endpoint);
    }
    ~Server()
    {
        router.reset();
        zap.reset();
    }
    // Receives one message (routing id + payload) and echoes "echo:" + payload. False on timeout.
    bool echoOnce(int timeoutMs = WaitMs)
    {
        zmq::pollitem_t item{router->handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, std::chrono::milliseconds(timeoutMs)) <= 0)
            return false;
        zmq::message_t id, payload;
        (void)router->recv(id);
        (void)router->recv(payload);
        router->send(id, zmq::send_flags::sndmore);
        router->send(zmq::buffer("echo:" + payload.to_string()));
        return true;
    }
};

struct Client {
    zmq::context_t context{1};
    zmq::socket_t dealer{context, zmq::socket_type::dealer};
    zmq::socket_t monitor{context, zmq::socket_type::pair};
    static inline std::atomic<int> counter{0};

    // identity == nullptr: a plain (NULL mechanism) client.
    Client(const PeerIdentity *identity, const Ed25519PublicKey &server)
    {
        dealer.set(zmq::sockopt::linger, 0);
        monitor.set(zmq::sockopt::linger, 0);
        if (identity)
            configureCurveClient(dealer, curveKeyPairOf(*identity), server);
        const std::string mon = "inproc://monitor-" + std::to_string(counter++);
        zmq_socket_monitor(dealer.handle(), mon.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
        monitor.connect(mon);
    }
    ~Client() { zmq_socket_monitor(dealer.handle(), nullptr, 0); }
    void connect(const std::string &endpoint) { dealer.connect(endpoint); }
    // First handshake event: {event, value}; {0, 0} on timeout.
    std::pair<int, int> handshake()
    {
        zmq::pollitem_t item{monitor.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, std::chrono::milliseconds(WaitMs)) <= 0)
            return {0, 0};
        zmq::message_t head, address;
        (void)monitor.recv(head);
        (void)monitor.recv(address);
        std::uint16_t event = 0;
        std::uint32_t value = 0;
        std::memcpy(&event, head.data(), 2);
        std::memcpy(&value, static_cast<const char *>(head.data()) + 2, 4);
        return {event, static_cast<int>(value)};
    }
    std::string roundTrip(Server &server, const std::string &payload)
    {
        dealer.send(zmq::buffer(payload));
        if (!server.echoOnce())
            return "<server got nothing>";
        zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, std::chrono::milliseconds(WaitMs)) <= 0)
            return "<no reply>";
        zmq::message_t reply;
        (void)dealer.recv(reply);
        return reply.to_string();
    }
};

Ed25519PublicKey pk(const PeerIdentity &id)
{
    return id.publicKey();
}

// A TCP relay on 127.0.0.1 that forwards one connection to `target` and records every byte.
class Relay final {
  public:
    explicit Relay(const std::string &zmqEndpoint)
    {
        const auto colon = zmqEndpoint.rfind(':');
        m_targetPort = static_cast<std::uint16_t>(std::stoi(zmqEndpoint.substr(colon + 1)));
        m_listen = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(m_listen, reinterpret_cast<sockaddr *>(&a), sizeof a);
        ::listen(m_listen, 1);
        socklen_t len = sizeof a;
        ::getsockname(m_listen, reinterpret_cast<sockaddr *>(&a), &len);
        m_port = ntohs(a.sin_port);
        m_thread = std::thread([this] { run(); });
    }
    ~Relay()
    {
        m_stop = true;
        m_thread.join();
        ::close(m_listen);
    }
    [[nodiscard]] std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(m_port); }
    [[nodiscard]] std::string seen() const
    {
        std::lock_guard lock(m_mutex);
        return m_seen;
    }

  private:
    void run()
    {
        pollfd lp{m_listen, POLLIN, 0};
        while (!m_stop && ::poll(&lp, 1, 50) <= 0) {
        }
        if (m_stop)
            return;
        const int in = ::accept(m_listen, nullptr, nullptr);
        const int out = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(m_targetPort);
        ::connect(out, reinterpret_cast<sockaddr *>(&a), sizeof a);
        pollfd fds[2] = {{in, POLLIN, 0}, {out, POLLIN, 0}};
        char buf[65536];
        while (!m_stop) {
            if (::poll(fds, 2, 50) <= 0)
                continue;
            bool closed = false;
            for (int i = 0; i < 2; ++i) {
                if (!(fds[i].revents & (POLLIN | POLLHUP)))
                    continue;
                const auto n = ::read(fds[i].fd, buf, sizeof buf);
                if (n <= 0) {
                    closed = true;
                    break;
                }
                {
                    std::lock_guard lock(m_mutex);
                    m_seen.append(buf, static_cast<std::size_t>(n));
                }
                (void)!::write(fds[1 - i].fd, buf, static_cast<std::size_t>(n));
            }
            if (closed)
                break;
        }
        ::close(in);
        ::close(out);
    }

    int m_listen = -1;
    std::uint16_t m_port = 0, m_targetPort = 0;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_mutex;
    std::string m_seen;
    std::thread m_thread;
};

} // namespace

class TestCurveSecurity final : public QObject {
    Q_OBJECT

  private:
    ms::KeyPair m_lead = ms::generateKeyPair();

    // Connects `who` to a closed-run server holding `offer` (presenter, token) and returns the
    // handshake event and the ZAP handler's last refusal.
    std::tuple<int, int, std::string> closedHandshake(const PeerIdentity &who,
                                                      std::optional<std::pair<Ed25519PublicKey, std::string>> offer)
    {
        Server server(true, m_lead.publicKey);
        if (offer)
            server.registry->offer(offer->first, offer->second);
        Client client(&who, pk(server.identity));
        client.connect(server.endpoint);
        const auto [event, value] = client.handshake();
        return {event, value, server.zap->lastRefusal()};
    }

  private Q_SLOTS:
    void initTestCase() { QVERIFY(sodium_init() >= 0); }

    void curveKeysDeriveFromTheIdentity()
    {
        const auto id = PeerIdentity::generate();
        const auto pair = curveKeyPairOf(id);
        QVERIFY(curvePublicKeyOf(id.publicKey()) == pair.publicKey);
        CurveKey fromSecret{};
        crypto_scalarmult_base(fromSecret.data(), pair.secretKey.data());
        QVERIFY(fromSecret == pair.publicKey); // the derived secret belongs to the derived public key
        QVERIFY(curvePublicKeyOf(PeerIdentity::generate().publicKey()) != pair.publicKey);
    }

    void validTokenPassesAndMessagesRoundTrip()
    {
        const auto alice = PeerIdentity::generate();
        Server server(true, m_lead.publicKey);
        server.registry->offer(pk(alice),
                               issueAccessToken(m_lead.secretKey, RunId, pk(alice), "alice", Now - 60, Now + 3600));
        Client client(&alice, pk(server.identity));
        client.connect(server.endpoint);
        QCOMPARE(client.handshake().first, ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
        QCOMPARE(client.roundTrip(server, "gradient shard 7"), std::string("echo:gradient shard 7"));
        QVERIFY(server.zap->accepted() >= 1);
        QCOMPARE(server.zap->refused(), std::uint64_t{0});
    }

    void expiredTokenIsRefused()
    {
        const auto alice = PeerIdentity::generate();
        const auto [event, value, reason] =
            closedHandshake(alice, std::make_pair(pk(alice), issueAccessToken(m_lead.secretKey, RunId, pk(alice),
                                                                              "alice", Now - 7200, Now - 3600)));
        QCOMPARE(event, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
        QCOMPARE(value, 400);
        QVERIFY2(reason.find("expired 3600 s ago") != std::string::npos, reason.c_str());
    }

    void forgedTokenIsRefused()
    {
        const auto alice = PeerIdentity::generate();
        auto forger = ms::generateKeyPair();
        forger.secretKey.keyId = m_lead.secretKey.keyId; // claims to be the lead
        const auto [event, value, reason] = closedHandshake(
            alice,
            std::make_pair(pk(alice), issueAccessToken(forger.secretKey, RunId, pk(alice), "alice", Now, Now + 3600)));
        QCOMPARE(event, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
        QVERIFY2(reason.find("invalid signature") != std::string::npos, reason.c_str());
    }

    void reboundTokenIsRefused()
    {
        // Mallory presents (and connects with) Alice's valid token.
        const auto alice = PeerIdentity::generate();
        const auto mallory = PeerIdentity::generate();
        const auto [event, value, reason] =
            closedHandshake(mallory, std::make_pair(pk(mallory), issueAccessToken(m_lead.secretKey, RunId, pk(alice),
                                                                                  "alice", Now, Now + 3600)));
        QCOMPARE(event, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
        QVERIFY2(reason.find("not to the presenting peer") != std::string::npos, reason.c_str());
    }

    // A refused peer that keeps asking (every matchmaking request and every round opens a new
    // connection) is logged once per minute with the count, not once per attempt.
    void repeatedRefusalsAreLoggedOnce()
    {
        std::mutex mutex;
        std::vector<std::string> zapLines;
        const auto previous = dedloc::log::setSink([&](dedloc::log::Level, std::string_view category, std::string_view m) {
            if (category == "zap") {
                std::lock_guard lock(mutex);
                zapLines.emplace_back(m);
            }
        });
        const auto alice = PeerIdentity::generate();
        std::uint64_t refused = 0;
        {
            Server server(true, m_lead.publicKey); // closed run, and alice has no token
            for (int attempt = 0; attempt < 5; ++attempt) {
                Client client(&alice, pk(server.identity));
                client.connect(server.endpoint);
                QCOMPARE(client.handshake().first, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
            }
            refused = server.zap->refused();
        }
        dedloc::log::setSink(previous);
        QCOMPARE(refused, std::uint64_t(5));
        std::lock_guard lock(mutex);
        QCOMPARE(zapLines.size(), std::size_t(1));
        QVERIFY2(zapLines[0].find("no access token") != std::string::npos, zapLines[0].c_str());
    }

    void missingTokenAndOtherRunAreRefused()
    {
        const auto alice = PeerIdentity::generate();
        auto [event, value, reason] = closedHandshake(alice, std::nullopt);
        QCOMPARE(event, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
        QVERIFY2(reason.find("no access token") != std::string::npos, reason.c_str());
        std::tie(event, value, reason) =
            closedHandshake(alice, std::make_pair(pk(alice), issueAccessToken(m_lead.secretKey, "other-run", pk(alice),
                                                                              "alice", Now, Now + 3600)));
        QCOMPARE(event, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
        QVERIFY2(reason.find("is for run other-run") != std::string::npos, reason.c_str());
    }

    void openRunAcceptsWithoutToken()
    {
        const auto anyone = PeerIdentity::generate();
        Server server(false, m_lead.publicKey);
        Client client(&anyone, pk(server.identity));
        client.connect(server.endpoint);
        QCOMPARE(client.handshake().first, ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
        QCOMPARE(client.roundTrip(server, "hello"), std::string("echo:hello"));
    }

    void wrongServerKeyFails()
    {
        // A client that expects another server identity (a man in the middle) never completes.
        const auto anyone = PeerIdentity::generate();
        Server server(false, m_lead.publicKey);
        Client client(&anyone, pk(PeerIdentity::generate()));
        client.connect(server.endpoint);
        const auto event = client.handshake().first;
        QVERIFY2(event != ZMQ_EVENT_HANDSHAKE_SUCCEEDED && event != 0, qPrintable(QString::number(event)));
        QVERIFY(!server.echoOnce(300));
    }

    void plainClientCannotTalkToCurveServer()
    {
        Server server(false, m_lead.publicKey);
        Client plain(nullptr, pk(server.identity));
        plain.connect(server.endpoint);
        // libzmq 4.3 reports the NULL/CURVE mechanism mismatch as FAILED_NO_DETAIL on the client.
        const auto event = plain.handshake().first;
        QVERIFY2(event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL || event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL,
                 qPrintable(QString::number(event)));
        plain.dealer.send(zmq::buffer(std::string("plaintext")), zmq::send_flags::dontwait);
        QVERIFY(!server.echoOnce(300));
    }

    void trafficIsEncrypted()
    {
        const std::string marker = "PLAINTEXT-MARKER-0123456789-PLAINTEXT-MARKER";
        // Control: without CURVE the relay sees the marker (so the relay's capture works).
        {
            Server server(false, m_lead.publicKey, /*curve=*/false);
            Relay relay(server.endpoint);
            Client plain(nullptr, pk(server.identity));
            plain.connect(relay.endpoint());
            QCOMPARE(plain.roundTrip(server, marker), "echo:" + marker);
            QVERIFY(relay.seen().find(marker) != std::string::npos);
        }
        const auto anyone = PeerIdentity::generate();
        Server server(false, m_lead.publicKey);
        Relay relay(server.endpoint);
        Client client(&anyone, pk(server.identity));
        client.connect(relay.endpoint());
        QCOMPARE(client.roundTrip(server, marker), "echo:" + marker);
        const auto seen = relay.seen();
        QVERIFY2(seen.size() > 2 * marker.size(), qPrintable(QString::number(seen.size())));
        QVERIFY(seen.find(marker) == std::string::npos);
        QVERIFY(seen.find("CURVE") != std::string::npos); // the greeting names the mechanism
    }

    void secondZapHandlerInOneContextIsRefused()
    {
        zmq::context_t context(1);
        ZapHandler first(context, {}, nullptr);
        QVERIFY(test::errorOf([&] {
                    ZapHandler second(context, {}, nullptr);
                }).contains(QLatin1String("another ZAP handler")));
        AccessPolicy closed;
        closed.closed = true;
        zmq::context_t other(1);
        QVERIFY(test::errorOf([&] {
                    ZapHandler h(other, closed, nullptr);
                }).contains(QLatin1String("needs an access token registry")));
    }
};

QTEST_GUILESS_MAIN(TestCurveSecurity)
#include "tst_curvesecurity.moc"
