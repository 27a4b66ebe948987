// The swarm across machines: a monitor and two trainers, each in its own network namespace with
// its own address and a 100 Mbit/s link to a switch (tests/support/NetnsLinks.h). Nothing is
// shared on loopback, so this proves that the DHT, the service and the all-reduce sockets bind
// and advertise `--host` and that peers on different hosts train together. Root only: skipped
// with the reason otherwise.
#include "NetnsLinks.h"
#include "SwarmHarness.h"

#include <QTemporaryDir>
#include <QTest>

#include <fstream>
#include <memory>
#include <set>
#include <unistd.h>

using namespace dedloc::test;

class TestSwarmLinks : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_tmp;
    std::filesystem::path m_app = DEDLOC_APP;
    std::unique_ptr<NetnsLinks> m_links;

private Q_SLOTS:
    void initTestCase()
    {
        std::string why;
        if (!NetnsLinks::available(&why))
            QSKIP(qPrintable(QStringLiteral("the swarm over network namespaces %1").arg(QString::fromStdString(why))));
        m_tmp.setAutoRemove(qEnvironmentVariableIsEmpty("DEDLOC_KEEP_TEST_DIR"));
        // A prefix of our own, so that parallel runs and the benchmark never collide.
        try {
            m_links = std::make_unique<NetnsLinks>("dlst" + std::to_string(::getpid() % 100000), 3, 100.0, 214);
        } catch (const std::exception &e) { // e.g. a container without CAP_SYS_ADMIN or NET_ADMIN
            QSKIP(qPrintable(QStringLiteral("the swarm over network namespaces cannot run here: %1").arg(QString::fromUtf8(e.what()))));
        }
    }

    void cleanupTestCase() { m_links.reset(); }

    void trainersOnTwoHostsStayIdentical()
    {
        const auto root = std::filesystem::path(m_tmp.path().toStdString());
        SwarmHarness h(m_app, writeSignedTinyRun(root, 64), root / "peers");
        const QStringList names{QStringLiteral("monitor"), QStringLiteral("p1"), QStringLiteral("p2")};
        h.setLauncher([&](const QString &name) {
            return QStringList{QString::fromStdString(NetnsLinks::ipProgram()), QStringLiteral("netns"), QStringLiteral("exec"),
                               QString::fromStdString(m_links->nameOf(static_cast<int>(names.indexOf(name))))};
        });
        auto hostOf = [&](int member) { return QString::fromStdString(m_links->hostOf(member)); };
        h.setBootstrapHost(hostOf(0));
        auto &monitor = h.startMonitor({QStringLiteral("--host"), hostOf(0)});
        const QStringList args{QStringLiteral("--steps"), QStringLiteral("3"), QStringLiteral("--min-peers"),
                               QStringLiteral("2"), QStringLiteral("--average-state-every"), QStringLiteral("0")};
        auto &p1 = h.startPeer(QStringLiteral("p1"), QStringList(args) << QStringLiteral("--host") << hostOf(1));
        auto &p2 = h.startPeer(QStringLiteral("p2"), QStringList(args) << QStringLiteral("--host") << hostOf(2));
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2}); }, 180), {&p1, &p2, &monitor});
        QCOMPARE(p1.process->exitCode(), 0);
        QCOMPARE(p2.process->exitCode(), 0);

        // Each peer advertised its own host, not loopback.
        SWARM_VERIFY(p1.logText().contains(QStringLiteral("all-reduce tcp://%1:").arg(hostOf(1))), {&p1});
        SWARM_VERIFY(p2.logText().contains(QStringLiteral("all-reduce tcp://%1:").arg(hostOf(2))), {&p2});
        const auto s1 = byStep(p1), s2 = byStep(p2);
        for (long step = 1; step <= 3; ++step) {
            SWARM_VERIFY(s1.count(step) && s2.count(step), {&p1, &p2, &monitor});
            QVERIFY(s1.at(step).value("averaged", false));
            QCOMPARE(s1.at(step).value("group_size", 0), 2);
            QCOMPARE(s1.at(step).value("batch_samples", 0L),
                     s1.at(step).value("samples", 0L) + s2.at(step).value("samples", 0L));
            const auto sha = s1.at(step).value("params_sha", std::string());
            QVERIFY(!sha.empty());
            QCOMPARE(s2.at(step).value("params_sha", std::string()), sha);
        }
        // The monitor, on a third host, recorded both trainers' steps through the DHT.
        QVERIFY(SwarmHarness::waitFor([&] {
            std::ifstream in(root / "peers" / "swarm.jsonl");
            std::set<std::string> peers;
            std::string line;
            while (std::getline(in, line))
                peers.insert(nlohmann::json::parse(line).value("peer_id", std::string()));
            return peers.size() == 2;
        }, 15));
        monitor.stopGracefully();
    }
};

QTEST_GUILESS_MAIN(TestSwarmLinks)
#include "tst_swarmlinks.moc"
