// A closed run end to end: real `dedloc` processes on loopback, every link
// CurveZMQ, the run's manifest marked "access": "closed". Two trainers with valid access tokens
// (and the monitor, which holds one too) train together; three peers that try anyway (fault
// injection DEDLOC_FAULT_IGNORE_TOKEN: no token, an expired token, another peer's token) are
// refused at the handshake and never take part; a peer without a token that does not force its
// way in stops at once with a clear message.
#include "SwarmHarness.h"
#include "SwarmTestCase.h"
#include "net/PeerIdentity.h"
#include "security/AccessToken.h"
#include "util/AtomicFile.h"
#include "util/Clock.h"

#include <QTest>

#include <chrono>
#include <cstdio>
#include <map>

using namespace dedloc;
using namespace dedloc::test;

namespace {


} // namespace

class TestClosedRun : public SwarmTestCase {
    Q_OBJECT

  private Q_SLOTS:
    void onlyPeersWithValidTokensTakePart()
    {
        const auto d = scratch() / "closed";
        std::filesystem::create_directories(d);
        const auto run = writeSignedClosedTinyRun(d, 64);
        const auto root = d / "peers";
        // Identities first (the harness gives peer <name> the data dir <root>/<name>), so that
        // the lead can issue tokens for their keys, as a real lead does from --print-peer-key.
        std::map<std::string, PeerIdentity> ids;
        for (const char *name : {"monitor", "alice", "bob", "nobody", "expired", "thief", "plain"})
            ids.emplace(name, PeerIdentity::loadOrCreate(root / name / "identity.key"));
        const auto now = unixSeconds();
        auto token = [&](const std::string &name, std::int64_t from, std::int64_t until) {
            return issueAccessToken(run.lead, run.runId, ids.at(name).publicKey(), name, from, until);
        };
        auto place = [&](const std::string &name, const std::string &text) {
            const auto file = root / name / "runs" / run.runId / "access.token";
            std::filesystem::create_directories(file.parent_path());
            writeFileAtomically(file, text);
        };
        place("monitor", token("monitor", now - 60, now + 3600));
        place("alice", token("alice", now - 60, now + 3600));
        const auto bobToken = d / "bob.token"; // given with --token, surrounded by whitespace
        writeFileAtomically(bobToken, "\n  " + token("bob", now - 60, now + 3600) + "  \n");
        place("expired", token("expired", now - 7200, now - 3600));
        place("thief", token("alice", now - 60, now + 3600)); // alice's token, another key: rebound

        SwarmHarness h(m_app, run.manifest, root);
        // Without a token and without forcing: stops before training, with the reason.
        auto &plain = h.startPeer(QStringLiteral("plain"));
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return !plain.running(); }, 60), {&plain});
        QCOMPARE(plain.process->exitCode(), 2);
        SWARM_VERIFY(plain.logText().contains(QStringLiteral("this run is closed: your access token is missing")),
                     {&plain});
        QVERIFY(plain.events().empty());

        auto &monitor = h.startMonitor();
        // The admitted trainers run until the intruders have been refused (then they are
        // stopped): with a fixed short run they could finish before a slow intruder ever asked.
        const QStringList args{QStringLiteral("--steps"),
                               QStringLiteral("100000"),
                               QStringLiteral("--min-peers"),
                               QStringLiteral("2"),
                               QStringLiteral("--average-state-every"),
                               QStringLiteral("2")};
        auto &alice = h.startPeer(QStringLiteral("alice"), args);
        auto &bob = h.startPeer(QStringLiteral("bob"), QStringList(args) << QStringLiteral("--token")
                                                                         << QString::fromStdString(bobToken.string()));
        // The intruders try anyway (a modified client would): the others must refuse them.
        qputenv("DEDLOC_FAULT_IGNORE_TOKEN", "1");
        const QStringList intruderArgs{QStringLiteral("--steps"), QStringLiteral("50")};
        auto &nobody = h.startPeer(QStringLiteral("nobody"), intruderArgs);
        auto &expired = h.startPeer(QStringLiteral("expired"), intruderArgs);
        auto &thief = h.startPeer(QStringLiteral("thief"), intruderArgs);
        qunsetenv("DEDLOC_FAULT_IGNORE_TOKEN");
        const auto all = {&alice, &bob, &monitor, &nobody, &expired, &thief};

        // Every intruder tried to connect (to a leader or a state donor) and was refused at the
        // handshake (it knows only that much), while the admitted ones took at least 4 steps.
        SWARM_VERIFY(SwarmHarness::waitFor(
                         [&] {
                             for (auto *p : {&nobody, &expired, &thief})
                                 if (!p->logText().contains(QStringLiteral("refused the encrypted handshake")))
                                     return false;
                             return alice.lastStep() >= 4 && bob.lastStep() >= 4;
                         },
                         180),
                     all);
        for (auto *p : {&nobody, &expired, &thief, &alice, &bob, &monitor})
            p->stopGracefully();
        QCOMPARE(alice.process->exitCode(), 0);
        QCOMPARE(bob.process->exitCode(), 0);

        // The two admitted trainers stepped together every time, and only with each other.
        const auto sa = byStep(alice), sb = byStep(bob);
        for (long step = 1; step <= 4; ++step) {
            SWARM_VERIFY(sa.count(step) && sb.count(step), all);
            SWARM_VERIFY(sa.at(step).value("averaged", false), all);
            QCOMPARE(sa.at(step).value("group_size", 0), 2);
            QCOMPARE(sb.at(step).value("group_size", 0), 2);
            QVERIFY(sa.at(step).value("complete", false));
            const auto sha = sa.at(step).value("params_sha", std::string());
            QVERIFY(!sha.empty());
            QCOMPARE(sb.at(step).value("params_sha", std::string()), sha);
        }
        // The intruders never averaged with anyone.
        for (auto *p : {&nobody, &expired, &thief})
            for (const auto &e : p->events())
                SWARM_VERIFY(!e.value("averaged", false), {p});

        // The honest peers said why each intruder is out (logged once per peer and token) ...
        const QString aliceLog = alice.logText();
        auto refusedFor = [&](const char *name, const char *reason) {
            const auto id = QString::fromStdString(ids.at(name).peerId().substr(0, 8));
            return aliceLog.contains(
                QStringLiteral("peer %1 is not admitted to this closed run: %2").arg(id, QLatin1String(reason)));
        };
        SWARM_VERIFY(refusedFor("nobody", "no access token"), {&alice});
        SWARM_VERIFY(refusedFor("expired", "access token for expired expired"), {&alice});
        SWARM_VERIFY(refusedFor("thief", "access token for alice was issued to peer key"), {&alice});
        // Once per peer and token, although the reason's "expired N s ago" changes every record.
        QCOMPARE(aliceLog.count(QStringLiteral("peer %1 is not admitted")
                                    .arg(QString::fromStdString(ids.at("expired").peerId().substr(0, 8)))),
                 1);
        // ... and their ZAP handlers refused the intruders' connections.
        const QString honestLogs = aliceLog + bob.logText() + monitor.logText();
        SWARM_VERIFY(honestLogs.contains(QStringLiteral("refused a data-plane connection")), {&alice, &bob, &monitor});
        // The admitted peers never refused each other.
        for (const char *name : {"alice", "bob", "monitor"})
            QVERIFY(!refusedFor(name, ""));
    }
};

QTEST_GUILESS_MAIN(TestClosedRun)
#include "tst_closedrun.moc"
