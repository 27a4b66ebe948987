// LowDescriptors (sim/LowDescriptors.h): while a claim lives on a thread, that thread's socket()
// and pipe() land on the low descriptors held for DHT nodes, whatever other threads open; a DHT
// node made under a claim gets its sockets there (OpenDHT makes them on the calling thread).
#include "LowDescriptors.h"
#include "net/DhtNode.h"
#include "net/PeerIdentity.h"

#include <QTest>

#include <thread>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace dedloc;
using namespace dedloc::sim;

class TestLowDescriptors final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void aClaimMovesThisThreadsSocketsOntoHeldDescriptors()
    {
        LowDescriptors low(8);
        QCOMPARE(low.held(), std::size_t{8});
        const int plain = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); // above every held one
        QVERIFY(plain >= 0);
        int moved = -1, fds[2] = {-1, -1};
        {
            const LowDescriptors::Claim claim(low);
            moved = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            QCOMPARE(::pipe(fds), 0);
            QCOMPARE(claim.moved(), std::size_t{3});
        }
        QCOMPARE(low.held(), std::size_t{5});
        QVERIFY2(moved >= 0 && moved < plain, qPrintable(QStringLiteral("%1 against %2").arg(moved).arg(plain)));
        QVERIFY(fds[0] < plain && fds[1] < plain);
        // Still the socket it was, with its close-on-exec flag; the pipe still a pipe.
        int type = 0;
        socklen_t size = sizeof(type);
        QCOMPARE(::getsockopt(moved, SOL_SOCKET, SO_TYPE, &type, &size), 0);
        QCOMPARE(type, SOCK_DGRAM);
        QVERIFY(::fcntl(moved, F_GETFD) & FD_CLOEXEC);
        char byte = 'x';
        QCOMPARE(::write(fds[1], &byte, 1), ssize_t{1});
        byte = 0;
        QCOMPARE(::read(fds[0], &byte, 1), ssize_t{1});
        QCOMPARE(byte, 'x');
        // Without a claim, nothing is moved.
        const int after = ::socket(AF_INET, SOCK_DGRAM, 0);
        QVERIFY(after > plain);
        QCOMPARE(low.held(), std::size_t{5});
        for (const int fd : {plain, moved, fds[0], fds[1], after})
            ::close(fd);
    }

    void anotherThreadsSocketsAreNotMoved()
    {
        LowDescriptors low(8);
        const LowDescriptors::Claim claim(low);
        int fd = -1;
        std::thread([&fd] { fd = ::socket(AF_INET, SOCK_DGRAM, 0); }).join();
        QVERIFY(fd >= 0);
        QCOMPARE(claim.moved(), std::size_t{0});
        QCOMPARE(low.held(), std::size_t{8});
        ::close(fd);
    }

    void aDhtNodeMadeUnderAClaimGetsHeldDescriptors()
    {
        LowDescriptors low(32);
        const auto identity = PeerIdentity::generate();
        const LowDescriptors::Claim claim(low);
        DhtNode node(identity);
        // Its UDP socket and its receive loop's stop pipe, at least: what that loop selects on.
        QVERIFY2(claim.moved() >= 3, qPrintable(QString::number(claim.moved())));
        QCOMPARE(low.held(), 32 - claim.moved());
    }
};

QTEST_GUILESS_MAIN(TestLowDescriptors)
#include "tst_lowdescriptors.moc"
