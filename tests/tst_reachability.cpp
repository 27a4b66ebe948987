// Whether others can connect to a peer (core/averaging/Reachability.h): real service sockets on
// loopback answer reach? requests by connecting back to the endpoint asked about.
#include "averaging/PeerService.h"
#include "averaging/Reachability.h"
#include "averaging/ServiceClient.h"
#include "net/PeerIdentity.h"

#include <QtTest>

#include <zmq.hpp>

#include <atomic>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

using namespace dedloc;

namespace {

DonorAdvert advertOf(const PeerService &service, const std::string &peerId)
{
    return DonorAdvert{peerId, service.endpoint(), 0, {}};
}

ReachRequest requestFor(const std::string &endpoint)
{
    const PeerIdentity me = PeerIdentity::generate();
    return ReachRequest{me.peerId(), me.publicKey(), endpoint};
}

// An endpoint on 127.0.0.1 where nothing listens (bound, then closed).
std::string closedEndpoint()
{
    zmq::context_t context;
    zmq::socket_t s(context, zmq::socket_type::router);
    s.bind("tcp://127.0.0.1:*");
    return s.get(zmq::sockopt::last_endpoint);
}

} // namespace

class TestReachability final : public QObject {
    Q_OBJECT

  private:
    std::atomic<bool> m_stop{false};

  private Q_SLOTS:
    void aListeningServiceIsReachable()
    {
        PeerService checker("run"), me("run");
        const auto v = checkReachability({advertOf(checker, "checker")}, requestFor(me.endpoint()), nullptr, m_stop);
        QCOMPARE(int(v.reachability), int(Reachability::Reachable));
        QCOMPARE(v.checkersAsked, 1);
        QVERIFY2(v.why.find(me.endpoint()) != std::string::npos, v.why.c_str());
        QCOMPARE(me.served("ping"), 1LL); // the checker's probe arrived
        QCOMPARE(checker.served("reach?"), 1LL);
    }

    // A port forward that forwards nothing: the checker's connection fails.
    void anEndpointNobodyListensOnIsUnreachable()
    {
        PeerService checker("run");
        const auto v = checkReachability({advertOf(checker, "checker")}, requestFor(closedEndpoint()), nullptr, m_stop);
        QCOMPARE(int(v.reachability), int(Reachability::Unreachable));
        QVERIFY2(v.why.find("could not connect") != std::string::npos, v.why.c_str());
    }

    // The checker dials the advertised port at the address the request came from, never the
    // advertised host: a peer listening elsewhere (behind NAT: on its LAN address) is not
    // reached there, one listening on every address is, and learns where it was reached.
    void theCheckerDialsTheAddressTheRequestCameFrom()
    {
        PeerService checker("run"), elsewhere("run", "tcp://127.0.0.2:*"), everywhere("run", "tcp://0.0.0.0:*");
        auto v = checkReachability({advertOf(checker, "checker")}, requestFor(elsewhere.endpoint()), nullptr, m_stop);
        QCOMPARE(int(v.reachability), int(Reachability::Unreachable));
        QCOMPARE(elsewhere.served("ping"), 0LL);
        const auto port = everywhere.endpoint().substr(everywhere.endpoint().rfind(':'));
        v = checkReachability({advertOf(checker, "checker")}, requestFor("tcp://198.51.100.9" + port), nullptr, m_stop);
        QCOMPARE(int(v.reachability), int(Reachability::Reachable));
        QCOMPARE(v.reachedAt, "tcp://127.0.0.1" + port);
        v = checkReachability({advertOf(checker, "checker")}, requestFor("ipc:///tmp/some-socket"), nullptr, m_stop);
        QCOMPARE(int(v.reachability), int(Reachability::Unknown));
        QCOMPARE(dialBackTarget("tcp://10.0.0.5:40001", "203.0.113.7"), std::string("tcp://203.0.113.7:40001"));
        QCOMPARE(dialBackTarget("tcp://10.0.0.5:40001", ""), std::string());
        QCOMPARE(dialBackTarget("tcp://10.0.0.5:*", "203.0.113.7"), std::string());
        QCOMPARE(dialBackTarget("tcp://10.0.0.5:40001", "evil.example:1"), std::string());
    }

    // One checker that reached us outweighs one that could not; silent checkers decide nothing.
    void verdictOverSeveralCheckers()
    {
        PeerService a("run"), b("run"), me("run");
        const DonorAdvert silent{"silent", closedEndpoint(), 0, {}};
        auto v = checkReachability({advertOf(a, "a"), silent, advertOf(b, "b")}, requestFor(me.endpoint()), nullptr,
                                   m_stop, {3, 4.0});
        QCOMPARE(int(v.reachability), int(Reachability::Reachable));
        QCOMPARE(v.checkersAsked, 3);
        v = checkReachability({silent}, requestFor(me.endpoint()), nullptr, m_stop, {3, 1.0});
        QCOMPARE(int(v.reachability), int(Reachability::Unknown));
        v = checkReachability({}, requestFor(me.endpoint()), nullptr, m_stop);
        QCOMPARE(int(v.reachability), int(Reachability::Unknown));
        QCOMPARE(v.checkersAsked, 0);
    }

    // The checker never asks itself: its own advert is skipped.
    void ownAdvertIsSkipped()
    {
        PeerService me("run");
        auto request = requestFor(me.endpoint());
        const auto v = checkReachability({advertOf(me, request.peerId)}, request, nullptr, m_stop);
        QCOMPARE(v.checkersAsked, 0);
    }

    // The request names its key (which must be its peer id's) and a ZeroMQ endpoint.
    void requestRoundTripAndRefusals()
    {
        const auto bob = PeerIdentity::generate(), carol = PeerIdentity::generate();
        const ReachRequest r{bob.peerId(), bob.publicKey(), "tcp://192.0.2.4:40001"};
        const auto p = reachRequestFromJson(parseServiceMessage(encodeServiceMessage("reach?", reachRequestToJson(r))));
        QVERIFY(p.peerId == r.peerId && p.publicKey == r.publicKey && p.serviceEndpoint == r.serviceEndpoint);
        const std::vector<std::tuple<const char *, nlohmann::json, const char *>> refusals{
            {"k", reachRequestToJson({carol.peerId(), carol.publicKey(), "tcp://x:1"})["k"], "not the key"},
            {"a", "http://x", "not a ZeroMQ endpoint"},
            {"a", "", "without an endpoint"}};
        for (const auto &[field, value, reason] : refusals) {
            auto j = reachRequestToJson(r);
            j[field] = value;
            try {
                (void)reachRequestFromJson(j);
                QFAIL("accepted");
            } catch (const ProtocolError &e) {
                QVERIFY2(std::string(e.what()).find(reason) != std::string::npos, e.what());
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestReachability)
#include "tst_reachability.moc"
