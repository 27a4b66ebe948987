// TCP upload throughput from the kernel's tcp_info (core/net/TcpThroughput.h): on loopback
// connections whose receivers read slowly through a small window, the measured rate is the rate
// the receivers actually drained, one connection or two busy one after the other; every byte
// sent counts as acknowledged, also after its connection closed.
#include "net/TcpThroughput.h"

#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace dedloc;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int Window = 64 * 1024; // bytes, both socket buffers

int listenOnLoopback(int receiveBuffer, std::uint16_t *port)
{
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    // Set before listen(): accepted sockets inherit it, and the window stays small.
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, sizeof receiveBuffer);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || listen(s, 1) != 0)
        return -1;
    socklen_t len = sizeof a;
    getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
    *port = ntohs(a.sin_port);
    return s;
}

int connectTo(std::uint16_t port, int sendBuffer)
{
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sendBuffer, sizeof sendBuffer);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return ::connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 ? s : -1;
}

bool sendAll(int socket, std::size_t total)
{
    const std::vector<char> data(total, 'x');
    for (std::size_t sent = 0; sent < total;) {
        const auto n = send(socket, data.data() + sent, total - sent, 0);
        if (n <= 0)
            return false;
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

// A listener whose one connection is drained at about 3 MB/s (48 KiB every 15 ms) through a
// 64 KiB window: its sender is limited by the window for the whole transfer.
struct SlowReceiver {
    std::uint16_t port = 0;
    int listener = listenOnLoopback(Window, &port);
    std::atomic<std::size_t> received{0};
    Clock::time_point firstRead, lastRead;
    std::thread thread;

    void start(std::size_t total)
    {
        thread = std::thread([this, total] {
            const int c = accept(listener, nullptr, nullptr);
            std::vector<char> buffer(48 * 1024);
            while (received < total) {
                const auto n = recv(c, buffer.data(), buffer.size(), 0);
                if (n <= 0)
                    break;
                if (received == 0)
                    firstRead = Clock::now();
                received += static_cast<std::size_t>(n);
                lastRead = Clock::now();
                std::this_thread::sleep_for(std::chrono::milliseconds(15));
            }
            ::close(c);
        });
    }
    ~SlowReceiver()
    {
        if (thread.joinable())
            thread.join();
        ::close(listener);
    }
    [[nodiscard]] std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port); }
};

// Sends `total` bytes to `r` and waits until it has read them and acknowledged them.
bool transfer(SlowReceiver &r, std::size_t total, int *socket)
{
    r.start(total);
    *socket = connectTo(r.port, Window);
    if (*socket < 0 || !sendAll(*socket, total))
        return false;
    while (r.received < total)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return true;
}

double seconds(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

} // namespace

class TestTcpThroughput final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void endpointsThatAreNoNumericAddressAreSkipped()
    {
        QVERIFY(tcpSendStatsTo({"tcp://peer.example:5000", "nonsense", "tcp://:5", "tcp://127.0.0.1:0",
                                "tcp://127.0.0.1:99999"})
                    .empty());
    }

    void slowReceiverSetsTheMeasuredRate()
    {
        SlowReceiver r;
        QVERIFY(r.listener >= 0);
        QVERIFY(tcpSendStatsTo({r.endpoint()}).empty()); // a listening socket has no peer
        constexpr std::size_t total = 6 * 1024 * 1024;
        int sender = -1;
        QVERIFY(transfer(r, total, &sender));
        const auto stats = tcpSendStatsTo({"tcp://10.1.2.3:4", r.endpoint()}); // the first matches nothing
        ::close(sender);
        QCOMPARE(stats.size(), std::size_t(1)); // the sender's side only: the reader's peer is another port
        QVERIFY2(stats[0].bytesAcked >= total && stats[0].bytesAcked <= total + 1,
                 qPrintable(QString::number(stats[0].bytesAcked)));
        const double drained = static_cast<double>(total) / seconds(r.firstRead, r.lastRead);
        const double measured = static_cast<double>(stats[0].bytesAcked) / stats[0].busySeconds;
        qInfo("measured %.0f B/s, drained %.0f B/s, busy %.2f s", measured, drained, stats[0].busySeconds);
        QVERIFY2(measured > 0.75 * drained && measured < 1.3 * drained,
                 qPrintable(QStringLiteral("measured %1 B/s, drained %2 B/s").arg(measured).arg(drained)));
    }

    // A connection that moved nothing since the meter's start (a peer of an earlier exchange
    // keeps it open) says nothing of this exchange's round trip, though the kernel measured one.
    void anIdleConnectionSaysNothingOfTheRoundTrip()
    {
        SlowReceiver r;
        QVERIFY(r.listener >= 0);
        int sender = -1;
        QVERIFY(transfer(r, 256 * 1024, &sender));
        const auto stats = tcpSendStatsTo({r.endpoint()});
        QVERIFY(stats.size() == 1 && stats[0].minRttSeconds > 0.0);
        UploadMeter meter({r.endpoint()}, 0);
        meter.sample();
        ::close(sender);
        QCOMPARE(meter.bytes(), std::uint64_t{0});
        QCOMPARE(meter.roundTrip(), 0.0);
    }

    // A reducer sends its parts, then its results, on other connections: busy times one after the
    // other add up (the longest alone would report twice the rate).
    void meterAddsConnectionsBusyOneAfterTheOther()
    {
        SlowReceiver first, second;
        QVERIFY(first.listener >= 0 && second.listener >= 0);
        UploadMeter meter({first.endpoint(), second.endpoint()}, 0);
        std::atomic<bool> done{false};
        std::thread sampler([&] {
            while (!done) {
                meter.sample();
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
        });
        constexpr std::size_t total = 3 * 1024 * 1024;
        int a = -1, b = -1;
        const bool sent = transfer(first, total, &a) && transfer(second, total, &b);
        done = true;
        sampler.join();
        meter.sample();
        ::close(a);
        ::close(b);
        QVERIFY(sent);
        QVERIFY2(meter.bytes() >= 2 * total && meter.bytes() <= 2 * total + 2, qPrintable(QString::number(meter.bytes())));
        // Loopback: a round trip is measured, and it is short.
        QVERIFY2(meter.roundTrip() > 0.0 && meter.roundTrip() < 0.05, qPrintable(QString::number(meter.roundTrip())));
        const double drained = 2.0 * total / (seconds(first.firstRead, first.lastRead) + seconds(second.firstRead, second.lastRead));
        qInfo("meter %.0f B/s, drained %.0f B/s", meter.rate(), drained);
        QVERIFY2(meter.rate() > 0.75 * drained && meter.rate() < 1.3 * drained,
                 qPrintable(QStringLiteral("measured %1 B/s, drained %2 B/s").arg(meter.rate()).arg(drained)));
    }

    // A listener's side: the connections accepted on its port count (a reducer's RESULTs go out
    // on them), from the meter's start, and one closed after a sample keeps what it had moved.
    void meterKeepsAcceptedConnectionsAfterTheyClose()
    {
        std::uint16_t port = 0;
        const int listener = listenOnLoopback(1 << 20, &port);
        QVERIFY(listener >= 0);
        const int client = connectTo(port, 1 << 20);
        QVERIFY(client >= 0);
        const int accepted = accept(listener, nullptr, nullptr);
        QVERIFY(sendAll(accepted, 4096)); // before the meter: not counted
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        UploadMeter meter({}, port);
        UploadMeter elsewhere({}, static_cast<std::uint16_t>(port == 65535 ? 1 : port + 1));
        constexpr std::size_t total = 1 << 20;
        std::thread reader([&] {
            std::vector<char> buffer(64 * 1024);
            for (std::size_t got = 0; got < total + 4096;) {
                const auto n = recv(client, buffer.data(), buffer.size(), 0);
                if (n <= 0)
                    break;
                got += static_cast<std::size_t>(n);
            }
        });
        const bool sent = sendAll(accepted, total);
        reader.join();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        meter.sample();
        elsewhere.sample();
        ::close(accepted);
        meter.sample();
        ::close(client);
        ::close(listener);
        QVERIFY(sent);
        QVERIFY2(meter.bytes() == total, qPrintable(QString::number(meter.bytes())));
        QCOMPARE(elsewhere.bytes(), std::uint64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestTcpThroughput)
#include "tst_tcpthroughput.moc"
