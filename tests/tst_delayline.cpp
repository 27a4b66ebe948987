// Latency on the emulated internet (tests/support/DelayLine.h): the round trip between two hosts
// is the sum of their delays, between public hosts and through a home router's NAT, while a
// volunteer's own router stays undelayed. Root only (namespaces, TUN); skips otherwise.
// The round trip is taken as the time a TCP connect() needs (SYN out, SYN-ACK back), from a
// thread in the client's namespace (support/NetnsThread.h); the server listens in the other's.
#include "EmulatedInternet.h"
#include "NetnsThread.h"
#include "net/TcpThroughput.h"

#include <QtTest>

#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace dedloc::test;

namespace {

// A listening TCP socket on ip:port inside `ns`'s thread (the kernel answers SYNs; nobody accepts).
int listenIn(NetnsThread &ns, const std::string &ip, std::uint16_t port)
{
    int s = -1;
    ns.run([&] {
        s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const int on = 1;
        ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        const auto a = addressOf(ip, port);
        if (::bind(s, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0 || ::listen(s, 8) != 0) {
            ::close(s);
            s = -1;
        }
    });
    return s;
}

// A TCP connection from `ns`'s thread to ip:port (-1 if it failed); *ms: how long connect() took.
int connectIn(NetnsThread &ns, const std::string &ip, std::uint16_t port, double *ms)
{
    int s = -1;
    ns.run([&] {
        s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const auto a = addressOf(ip, port);
        const auto t0 = std::chrono::steady_clock::now();
        if (::connect(s, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
            ::close(s);
            s = -1;
        }
        *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    });
    return s;
}

// Milliseconds that connect() from `ns`'s thread to ip:port took; -1 if it failed.
double connectMs(NetnsThread &ns, const std::string &ip, std::uint16_t port)
{
    double ms = 0;
    const int s = connectIn(ns, ip, port, &ms);
    if (s < 0)
        return -1.0;
    ::close(s);
    return ms;
}

} // namespace

class TestDelayLine final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTripsAreTheSumOfTheHostsDelays()
    {
        std::string why;
        if (!EmulatedInternet::available(&why))
            QSKIP(qPrintable(QStringLiteral("the emulated internet %1").arg(QString::fromStdString(why))));
        std::unique_ptr<EmulatedInternet> net;
        int fast, slow, plain, home, router;
        try {
            net = std::make_unique<EmulatedInternet>("dldl" + std::to_string(::getpid() % 100000), 217);
            fast = net->addPublicHost({100, 100, 20});
            slow = net->addPublicHost({100, 100, 60});
            plain = net->addPublicHost({100, 100});
            router = net->addRouter();
            home = net->addVolunteer(router, {50, 10, 40});
        } catch (const std::exception &e) { // e.g. a container without CAP_NET_ADMIN or /dev/net/tun
            QSKIP(qPrintable(QStringLiteral("the emulated internet cannot be built here: %1").arg(QString::fromUtf8(e.what()))));
        }
        const std::uint16_t port = 47311;
        for (int server : {slow, plain}) {
            NetnsThread serverNs(net->namespaceOf(server));
            const int s = listenIn(serverNs, net->addressOf(server), port);
            QVERIFY(s >= 0);
            struct Case {
                int client;
                double expectMs;
            };
            const double serverDelay = server == slow ? 60 : 0;
            for (const Case c : {Case{fast, 20 + serverDelay}, Case{home, 40 + serverDelay}}) {
                // The least of three: a busy machine only adds time.
                double best = 1e9;
                for (int i = 0; i < 3; ++i) {
                    NetnsThread clientNs(net->namespaceOf(c.client));
                    const double ms = connectMs(clientNs, net->addressOf(server), port);
                    QVERIFY2(ms >= 0, "connect failed");
                    best = std::min(best, ms);
                }
                QVERIFY2(best >= c.expectMs - 1 && best < c.expectMs + 50,
                         qPrintable(QStringLiteral("round trip %1 ms, expected %2").arg(best).arg(c.expectMs)));
            }
            ::close(s);
        }
        // The volunteer's own LAN is not delayed: its router answers at once.
        const auto lan = EmulatedInternet::routerLanAddress(router);
        NetnsThread routerNs(net->routerNamespace(router)), homeNs(net->namespaceOf(home));
        const int s = listenIn(routerNs, lan, port);
        QVERIFY(s >= 0);
        const double ms = connectMs(homeNs, lan, port);
        QVERIFY2(ms >= 0 && ms < 20, qPrintable(QStringLiteral("round trip to the router %1 ms").arg(ms)));
        ::close(s);

        // The kernel's own figure (net/TcpThroughput.h, what a staggered sender sizes its buffers
        // by) sees the delay: the least round trip on a connection from `fast` to `slow`.
        NetnsThread slowNs(net->namespaceOf(slow)), fastNs(net->namespaceOf(fast));
        const int server = listenIn(slowNs, net->addressOf(slow), port);
        QVERIFY(server >= 0);
        double connectTook = 0;
        const int client = connectIn(fastNs, net->addressOf(slow), port, &connectTook);
        QVERIFY(client >= 0);
        const char bytes[4096] = {};
        QCOMPARE(::send(client, bytes, sizeof bytes, 0), static_cast<ssize_t>(sizeof bytes));
        std::this_thread::sleep_for(std::chrono::milliseconds(300)); // acknowledged by now
        const auto stats = dedloc::tcpSendStatsTo({"tcp://" + net->addressOf(slow) + ":" + std::to_string(port)});
        ::close(client);
        ::close(server);
        QCOMPARE(stats.size(), std::size_t{1});
        QVERIFY2(stats[0].minRttSeconds >= 0.079 && stats[0].minRttSeconds < 0.13,
                 qPrintable(QStringLiteral("least round trip %1 s").arg(stats[0].minRttSeconds)));
    }
};

QTEST_GUILESS_MAIN(TestDelayLine)
#include "tst_delayline.moc"
