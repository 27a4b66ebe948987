// net/PortMapping: port mappings on a home router by UPnP-IGD and NAT-PMP.
// Without root: the checks of the options, the private-address test, and a bounded failure with
// no router. With root and miniupnpd (tests/support/EmulatedInternet.h): a volunteer behind a
// router that runs miniupnpd maps two ports by each method; a public host connects to the
// router's external address at the mapped ports and reaches listeners in the home; the router
// lists the mappings; a short lease kept by the renewal thread outlives a mapping left alone;
// after stop the router lists nothing and connections are refused.
#include "EmulatedInternet.h"
#include "NetnsThread.h"
#include "net/PortMapping.h"
#include "util/Error.h"

#include <miniupnpc/miniupnpc.h>
#include <miniupnpc/upnpcommands.h>

#include <QElapsedTimer>
#include <QTest>

#include <arpa/inet.h>
#include <condition_variable>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace dedloc;
using namespace dedloc::test;

namespace {

// A socket of `type` bound on host (any port), listening if TCP; returns the fd (-1 on
// failure), sets `port`.
int boundOn(const std::string &host, int type, std::uint16_t &port)
{
    const int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    auto a = addressOf(host, 0);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || (type == SOCK_STREAM && ::listen(fd, 4) != 0)
        || ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
        ::close(fd);
        return -1;
    }
    port = ntohs(a.sin_port);
    return fd;
}

// Connects to host:port within 2 s and sends `text`; false when the connection fails.
bool connectAndSend(const std::string &host, std::uint16_t port, const std::string &text)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const auto a = addressOf(host, port);
    int r = ::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a);
    if (r != 0 && errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        r = ::poll(&p, 1, 2000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 ? 0 : -1;
    }
    const bool sent = r == 0 && ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return sent;
}

// Accepts one connection within 2 s and reads what it sent.
std::string acceptAndRead(int listener)
{
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 2000) != 1)
        return {};
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    char buf[64] = {};
    pollfd q{fd, POLLIN, 0};
    const ssize_t n = ::poll(&q, 1, 2000) == 1 ? ::recv(fd, buf, sizeof buf - 1, 0) : -1;
    ::close(fd);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Sends `text` in one datagram to host:port from a fresh socket.
bool sendDatagram(const std::string &host, std::uint16_t port, const std::string &text)
{
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const auto a = addressOf(host, port);
    const bool sent = ::sendto(fd, text.data(), text.size(), 0, reinterpret_cast<const sockaddr *>(&a), sizeof a)
                      == static_cast<ssize_t>(text.size());
    ::close(fd);
    return sent;
}

// One datagram received within 2 s, or "".
std::string receiveDatagram(int fd)
{
    char buf[64] = {};
    pollfd p{fd, POLLIN, 0};
    const ssize_t n = ::poll(&p, 1, 2000) == 1 ? ::recv(fd, buf, sizeof buf - 1, 0) : -1;
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// What the router's UPnP service lists for an external port: "client:port", or "" (none).
std::string routerEntry(std::uint16_t externalPort, const char *protocol = "TCP")
{
    int error = 0;
    UPNPDev *devices = upnpDiscoverDevice("urn:schemas-upnp-org:device:InternetGatewayDevice:1", 1000, nullptr, nullptr,
                                          UPNP_LOCAL_PORT_ANY, 0, 2, &error);
    UPNPUrls urls{};
    IGDdatas data{};
    char lan[64] = {}, client[16] = {}, port[6] = {}, desc[80] = {}, enabled[4] = {}, lease[16] = {};
    const int igd = devices ? UPNP_GetValidIGD(devices, &urls, &data, lan, sizeof lan) : 0;
    freeUPNPDevlist(devices);
    if (igd == 0)
        return "no IGD";
    const int r = UPNP_GetSpecificPortMappingEntry(urls.controlURL, data.first.servicetype, std::to_string(externalPort).c_str(),
                                                   protocol, nullptr, client, port, desc, enabled, lease);
    FreeUPNPUrls(&urls);
    return r == UPNPCOMMAND_SUCCESS ? std::string(client) + ":" + port : std::string();
}

} // namespace

class TestPortMapping : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<EmulatedInternet> m_net;
    QString m_noNet; // why the root parts skip
    int m_public = -1, m_home = -1, m_router = -1;

    // QSKIP leaves only the function it is in: each test checks for itself.
#define NEED_NET()                                                                                                      \
    do {                                                                                                                \
        if (!m_net)                                                                                                     \
            QSKIP(qPrintable(m_noNet));                                                                                 \
    } while (false)

private Q_SLOTS:
    void initTestCase()
    {
        std::string why;
        if (!EmulatedInternet::miniupnpdAvailable(&why)) {
            m_noNet = QStringLiteral("the emulated internet with miniupnpd %1").arg(QString::fromStdString(why));
            return;
        }
        try {
            // A public network outside the private ranges: miniupnpd refuses private external addresses.
            m_net = std::make_unique<EmulatedInternet>("dlpm" + std::to_string(::getpid() % 100000), 217, "25.217.0");
            m_public = m_net->addPublicHost({100, 100});
            m_router = m_net->addRouter(RouterOptions{true});
            m_home = m_net->addVolunteer(m_router, {100, 100});
        } catch (const std::exception &e) {
            m_net.reset();
            m_noNet = QStringLiteral("the emulated internet cannot be built here: %1").arg(QString::fromUtf8(e.what()));
        }
    }

    void cleanupTestCase() { m_net.reset(); }

    void badOptionsAreRefused()
    {
        QVERIFY_THROWS_EXCEPTION(Error, PortMapping(PortMappingOptions{}));
        PortMappingOptions zero;
        zero.ports = {40000, 0};
        QVERIFY_THROWS_EXCEPTION(Error, PortMapping{zero});
        PortMappingOptions gateway;
        gateway.ports = {40000};
        gateway.tryUpnp = false;
        gateway.natpmpGateway = "router.local";
        PortMapping m(gateway);
        const auto r = m.map();
        QVERIFY(!r.ok());
        QVERIFY2(r.why.find("no IPv4 address") != std::string::npos, r.why.c_str());
        QCOMPARE(m.renew().why, std::string("no mapping to renew"));
    }

    void privateAddresses_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<bool>("isPrivate");
        QTest::newRow("rfc1918 10/8") << "10.1.2.3" << true;
        QTest::newRow("rfc1918 172.16/12") << "172.31.255.1" << true;
        QTest::newRow("172.32 is public") << "172.32.0.1" << false;
        QTest::newRow("rfc1918 192.168/16") << "192.168.0.1" << true;
        QTest::newRow("cgnat 100.64/10") << "100.127.0.1" << true;
        QTest::newRow("100.128 is public") << "100.128.0.1" << false;
        QTest::newRow("loopback") << "127.0.0.1" << true;
        QTest::newRow("link-local") << "169.254.1.1" << true;
        QTest::newRow("public") << "203.0.113.7" << false;
        QTest::newRow("not an address") << "router" << true;
    }

    void privateAddresses()
    {
        QFETCH(QString, address);
        QFETCH(bool, isPrivate);
        QCOMPARE(isPrivateIpv4(address.toStdString()), isPrivate);
    }

    void describeNamesMethodAddressAndPorts()
    {
        PortMappingResult r;
        QCOMPARE(r.describe(), std::string());
        r.method = PortMappingMethod::Upnp;
        r.externalAddress = "203.0.113.7";
        r.externalPorts = {40000, 40001};
        QCOMPARE(r.describe(), std::string("a UPnP port mapping on the router (203.0.113.7:40000 and 40001)"));
    }

    // No router: both methods fail, the result says why, within the bounded time.
    void noRouterFailsWithAReasonInBoundedTime()
    {
        PortMappingOptions o;
        o.ports = {40000, 40001};
        o.natpmpGateway = "127.0.0.1"; // nothing serves NAT-PMP here
        PortMapping m(o);
        QElapsedTimer t;
        t.start();
        const auto r = m.map();
        const auto ms = t.elapsed();
        qInfo("no router: %lld ms: %s", static_cast<long long>(ms), r.why.c_str());
        QVERIFY(!r.ok());
        QCOMPARE(r.method, PortMappingMethod::None);
        QVERIFY2(r.why.find("no UPnP gateway answered") != std::string::npos, r.why.c_str());
        QVERIFY2(r.why.find("NAT-PMP") != std::string::npos, r.why.c_str());
        QVERIFY(ms < 5000);
    }

    void mapsPortsThatThePublicSideReaches_data()
    {
        QTest::addColumn<bool>("upnp");
        QTest::newRow("UPnP-IGD") << true;
        QTest::newRow("NAT-PMP") << false;
    }

    void mapsPortsThatThePublicSideReaches()
    {
        NEED_NET();
        QFETCH(bool, upnp);
        NetnsThread home(m_net->namespaceOf(m_home)), outside(m_net->namespaceOf(m_public));
        const std::string homeAddress = m_net->addressOf(m_home), external = m_net->routerAddress(m_router);
        std::uint16_t p[3] = {};
        int fd[3] = {-1, -1, -1};
        std::unique_ptr<PortMapping> kept, leftAlone;
        PortMappingResult r, other;
        QVERIFY(home.run([&] {
            for (int i = 0; i < 3; ++i)
                fd[i] = boundOn(homeAddress, SOCK_STREAM, p[i]);
            PortMappingOptions o;
            o.ports = {p[0], p[1]};
            o.lanAddress = homeAddress;
            o.tryUpnp = upnp;
            o.natpmpGateway = EmulatedInternet::routerLanAddress(m_router);
            o.leaseSeconds = 4; // renewed every 2 s
            o.description = "dedloc test";
            kept = std::make_unique<PortMapping>(o);
            r = kept->map();
            o.ports = {p[2]};
            o.autoRenew = false;
            leftAlone = std::make_unique<PortMapping>(o);
            other = leftAlone->map();
        }));
        QVERIFY2(r.ok(), r.why.c_str());
        QVERIFY2(other.ok(), other.why.c_str());
        QCOMPARE(r.method, upnp ? PortMappingMethod::Upnp : PortMappingMethod::NatPmp);
        QCOMPARE(r.externalAddress, external);
        QCOMPARE(r.externalPorts, (std::vector<std::uint16_t>{p[0], p[1]})); // the same ports were free
        QCOMPARE(r.leaseSeconds, 4u);

        auto reaches = [&](int i, std::uint16_t externalPort) {
            bool sent = false;
            const std::string text = "hello " + std::to_string(i);
            outside.run([&] { sent = connectAndSend(external, externalPort, text); });
            return sent && acceptAndRead(fd[i]) == text;
        };
        QVERIFY(reaches(0, r.externalPorts[0]));
        QVERIFY(reaches(1, r.externalPorts[1]));
        std::string entry;
        home.run([&] { entry = routerEntry(r.externalPorts[1]); });
        QCOMPARE(entry, homeAddress + ":" + std::to_string(p[1]));

        // A 4 s lease: the renewed mapping outlives the one left alone.
        QTest::qWait(9000);
        std::string renewed, expired;
        home.run([&] {
            renewed = routerEntry(r.externalPorts[0]);
            expired = routerEntry(other.externalPorts[0]);
        });
        QCOMPARE(renewed, homeAddress + ":" + std::to_string(p[0]));
        QCOMPARE(expired, std::string());
        QVERIFY(reaches(0, r.externalPorts[0]));
        PortMappingResult again;
        home.run([&] { again = kept->renew(); });
        QVERIFY2(again.ok(), again.why.c_str());
        QCOMPARE(again.externalPorts, r.externalPorts);

        // Destruction removes the mappings (from the home namespace, where UPnP opens its sockets).
        QElapsedTimer t;
        t.start();
        home.run([&] {
            kept.reset();
            leftAlone.reset();
        });
        qInfo("%s: mapped in the home, reached from outside; stop took %lld ms", upnp ? "UPnP" : "NAT-PMP",
              static_cast<long long>(t.elapsed()));
        home.run([&] { entry = routerEntry(r.externalPorts[0]) + routerEntry(r.externalPorts[1]); });
        QCOMPARE(entry, std::string());
        bool sent = true;
        outside.run([&] { sent = connectAndSend(external, r.externalPorts[0], "late"); });
        QVERIFY(!sent);
        for (int f : fd)
            ::close(f);
    }

    // The DHT's port is UDP: a mapping with `udp` forwards datagrams from the public side to the
    // home, the router lists it as UDP (not TCP), and it goes with the mapping.
    void mapsAUdpPort_data() { mapsPortsThatThePublicSideReaches_data(); }
    void mapsAUdpPort()
    {
        NEED_NET();
        QFETCH(bool, upnp);
        NetnsThread home(m_net->namespaceOf(m_home)), outside(m_net->namespaceOf(m_public));
        const std::string homeAddress = m_net->addressOf(m_home), external = m_net->routerAddress(m_router);
        std::uint16_t port = 0;
        int fd = -1;
        std::unique_ptr<PortMapping> mapping;
        PortMappingResult r;
        std::string udpEntry, tcpEntry;
        QVERIFY(home.run([&] {
            fd = boundOn(homeAddress, SOCK_DGRAM, port);
            PortMappingOptions o;
            o.ports = {port};
            o.udp = true;
            o.lanAddress = homeAddress;
            o.tryUpnp = upnp;
            o.natpmpGateway = EmulatedInternet::routerLanAddress(m_router);
            mapping = std::make_unique<PortMapping>(o);
            r = mapping->map();
            udpEntry = routerEntry(port, "UDP");
            tcpEntry = routerEntry(port, "TCP");
        }));
        QVERIFY2(r.ok(), r.why.c_str());
        QCOMPARE(r.externalPorts, std::vector<std::uint16_t>{port});
        if (upnp) { // NAT-PMP mappings are listed by miniupnpd too, but UPnP is the way to ask
            QCOMPARE(udpEntry, homeAddress + ":" + std::to_string(port));
            QCOMPARE(tcpEntry, std::string());
        }
        bool sent = false;
        outside.run([&] { sent = sendDatagram(external, port, "dht ping"); });
        QVERIFY(sent);
        QCOMPARE(receiveDatagram(fd), std::string("dht ping"));
        home.run([&] {
            mapping.reset();
            udpEntry = routerEntry(port, "UDP");
        });
        QCOMPARE(udpEntry, std::string());
        ::close(fd);
    }
};

QTEST_GUILESS_MAIN(TestPortMapping)
#include "tst_portmapping.moc"
