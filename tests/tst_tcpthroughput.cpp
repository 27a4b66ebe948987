// TCP upload throughput from the kernel's tcp_info (core/net/TcpThroughput.h): on a loopback
// connection whose receiver reads slowly through a small window, the measured rate is the rate
// the receiver actually drained, and every byte sent is counted as acknowledged.
#include "net/TcpThroughput.h"

#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace dedloc;

namespace {

using Clock = std::chrono::steady_clock;

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

} // namespace

class TestTcpThroughput final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void rateIsBytesOverTheLongestBusyTime()
    {
        // Busy at the same time, two connections share the uplink: 3 MB in 1.5 s.
        QCOMPARE(uploadRate({{1'000'000, 1.0}, {2'000'000, 1.5}}), 2'000'000.0);
        QCOMPARE(uploadRate({{100'000, 1.0}}), -1.0);   // too few bytes to tell
        QCOMPARE(uploadRate({{1'000'000, 0.01}}), -1.0); // too short to tell
        QCOMPARE(uploadRate({}), -1.0);
    }

    void endpointsThatAreNoNumericAddressAreSkipped()
    {
        QVERIFY(tcpSendStatsTo({"tcp://peer.example:5000", "nonsense", "tcp://:5", "tcp://127.0.0.1:0",
                                "tcp://127.0.0.1:99999"})
                    .empty());
    }

    // A receiver draining about 3 MB/s through a 64 KiB window: the sender's connection is
    // limited by the window for the whole transfer, so its busy time is the transfer's time.
    void slowReceiverSetsTheMeasuredRate()
    {
        std::uint16_t port = 0;
        const int listener = listenOnLoopback(64 * 1024, &port);
        QVERIFY(listener >= 0);
        const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
        QVERIFY(tcpSendStatsTo({endpoint}).empty()); // a listening socket has no peer

        constexpr std::size_t total = 6 * 1024 * 1024, chunk = 48 * 1024;
        std::size_t received = 0;
        Clock::time_point firstRead, lastRead;
        std::thread reader([&] {
            const int c = accept(listener, nullptr, nullptr);
            std::vector<char> buffer(chunk);
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
        const int sender = socket(AF_INET, SOCK_STREAM, 0);
        const int sendBuffer = 64 * 1024;
        setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &sendBuffer, sizeof sendBuffer);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        QCOMPARE(::connect(sender, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        const std::vector<char> data(total, 'x');
        for (std::size_t sent = 0; sent < total;) {
            const auto n = send(sender, data.data() + sent, total - sent, 0);
            QVERIFY(n > 0);
            sent += static_cast<std::size_t>(n);
        }
        while (received < total) // the reader thread counts; acknowledgements follow its reads
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const auto stats = tcpSendStatsTo({"tcp://10.1.2.3:4", endpoint}); // the first matches nothing
        reader.join();
        ::close(sender);
        ::close(listener);

        QCOMPARE(stats.size(), std::size_t(1)); // the sender's side only: the reader's peer is another port
        QVERIFY2(stats[0].bytesAcked >= total && stats[0].bytesAcked <= total + 1,
                 qPrintable(QString::number(stats[0].bytesAcked)));
        const double drained = static_cast<double>(total) / std::chrono::duration<double>(lastRead - firstRead).count();
        const double measured = uploadRate(stats);
        qInfo("measured %.0f B/s, drained %.0f B/s, busy %.2f s", measured, drained, stats[0].busySeconds);
        QVERIFY2(measured > 0.75 * drained && measured < 1.3 * drained,
                 qPrintable(QStringLiteral("measured %1 B/s, drained %2 B/s").arg(measured).arg(drained)));
    }

    // A listener's side: the connections accepted on its port count (a reducer's RESULTs go out
    // on them), and one closed after a sample keeps counting with what it had moved.
    void meterKeepsAcceptedConnectionsAfterTheyClose()
    {
        std::uint16_t port = 0;
        const int listener = listenOnLoopback(1 << 20, &port);
        QVERIFY(listener >= 0);
        const int client = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        QCOMPARE(::connect(client, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        const int accepted = accept(listener, nullptr, nullptr);
        constexpr std::size_t total = 1 << 20;
        std::thread reader([&] {
            std::vector<char> buffer(64 * 1024);
            for (std::size_t got = 0; got < total;) {
                const auto n = recv(client, buffer.data(), buffer.size(), 0);
                if (n <= 0)
                    break;
                got += static_cast<std::size_t>(n);
            }
        });
        const std::vector<char> data(total, 'y');
        for (std::size_t sent = 0; sent < total;)
            sent += static_cast<std::size_t>(std::max<ssize_t>(0, send(accepted, data.data() + sent, total - sent, 0)));
        reader.join();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        UploadMeter meter({}, port);
        UploadMeter elsewhere({}, static_cast<std::uint16_t>(port == 65535 ? 1 : port + 1));
        meter.sample();
        elsewhere.sample();
        ::close(accepted);
        meter.sample();
        ::close(client);
        ::close(listener);
        QVERIFY2(meter.bytes() >= total && meter.bytes() <= total + 1, qPrintable(QString::number(meter.bytes())));
        QCOMPARE(elsewhere.bytes(), std::uint64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestTcpThroughput)
#include "tst_tcpthroughput.moc"
