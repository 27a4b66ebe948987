// Volunteers on an emulated internet (tests/support/EmulatedInternet.h): the lead's
// `dedloc-lead serve` and one reachable trainer with public addresses, three trainers behind two
// home routers that masquerade (NAT, no port forward) on asymmetric links (50/10 and 20/5
// Mbit/s; the tiny run averages 5 MB of uncompressed gradient a step). Router b runs a real
// UPnP-IGD / NAT-PMP daemon (miniupnpd; the public side then uses a non-private /24 that never
// leaves the namespaces). Nobody tells the trainers what their network is: the one behind router
// b asks it for port mappings, is reached through them, and leads or reduces like a public peer;
// the two behind router a learn that nobody can connect back and run in client mode by
// themselves; serve leads and reduces for them. Judged by the
// trainers' metrics: averaged steps, identical parameters, the upload each measured. Root only:
// skipped with the reason otherwise.
#include "EmulatedInternet.h"
#include "SwarmHarness.h"

#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <unistd.h>

using namespace dedloc::test;

class TestHomeInternet : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_tmp;
    std::filesystem::path m_app = DEDLOC_APP;
    std::filesystem::path m_lead = DEDLOC_LEAD;
    std::unique_ptr<EmulatedInternet> m_net;
    std::map<QString, int> m_hosts; // process name -> host
    bool m_upnp = false;            // router b runs miniupnpd

private Q_SLOTS:
    void initTestCase()
    {
        std::string why;
        if (!EmulatedInternet::available(&why))
            QSKIP(qPrintable(QStringLiteral("the emulated internet %1").arg(QString::fromStdString(why))));
        m_tmp.setAutoRemove(qEnvironmentVariableIsEmpty("DEDLOC_KEEP_TEST_DIR"));
        try {
            std::string noUpnp;
            m_upnp = EmulatedInternet::miniupnpdAvailable(&noUpnp);
            if (!m_upnp)
                qWarning("router b is a plain NAT: %s", noUpnp.c_str());
            m_net = std::make_unique<EmulatedInternet>("dlhi" + std::to_string(::getpid() % 100000), 215,
                                                       m_upnp ? "25.215.0" : "");
            m_hosts[QStringLiteral("serve")] = m_net->addPublicHost({100, 100});
            m_hosts[QStringLiteral("public")] = m_net->addPublicHost({50, 50});
            const int a = m_net->addRouter(), b = m_net->addRouter(RouterOptions{m_upnp});
            m_hosts[QStringLiteral("home-a1")] = m_net->addVolunteer(a, {50, 10});
            m_hosts[QStringLiteral("home-a2")] = m_net->addVolunteer(a, {20, 5});
            m_hosts[QStringLiteral("home-b")] = m_net->addVolunteer(b, {50, 10});
        } catch (const std::exception &e) { // e.g. a container without CAP_NET_ADMIN or NAT support
            QSKIP(qPrintable(QStringLiteral("the emulated internet cannot be built here: %1").arg(QString::fromUtf8(e.what()))));
        }
    }

    void cleanupTestCase() { m_net.reset(); }

    void volunteersBehindNatAverageThroughTheServer()
    {
        const auto root = std::filesystem::path(m_tmp.path().toStdString());
        SwarmHarness h(m_app, writeSignedTinyRun(root, 64), root / "peers");
        h.setLauncher([&](const QString &name) {
            return QStringList{QStringLiteral("ip"), QStringLiteral("netns"), QStringLiteral("exec"),
                               QString::fromStdString(m_net->namespaceOf(m_hosts.at(name)))};
        });
        auto address = [&](const char *name) {
            return QString::fromStdString(m_net->addressOf(m_hosts.at(QString::fromLatin1(name))));
        };
        h.setBootstrapHost(address("serve"));
        // No state rounds: each moves 15 MB of state up the 5 Mbit/s link (about 25 s), and this
        // test is about the gradients' rounds.
        const QStringList stateEvery{QStringLiteral("--average-state-every"), QStringLiteral("0")};
        auto &serve = h.startLeadServe(m_lead, QStringList(stateEvery) << QStringLiteral("--host") << address("serve"));
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return serve.logText().contains(QStringLiteral("DHT bootstrap")); }, 60),
                     {&serve});
        QTest::qWait(1500); // its donor advert: what the trainers ask to connect back
        // A whole gradient up a 2 Mbit/s link takes seconds: the reference timeouts, not the
        // harness's short ones.
        const QStringList args = QStringList{QStringLiteral("--steps"), QStringLiteral("8"), QStringLiteral("--sender-timeout"),
                                             QStringLiteral("15"), QStringLiteral("--reducer-timeout"), QStringLiteral("30")}
                                 + stateEvery;
        // All four at once, each computing only once it has seen serve and the four trainers
        // (--min-peers 5, a start gate: later, the DHT views of the peers behind NAT may miss
        // some records, and training goes on). Nobody steps before the others are there: a trainer
        // that misses one of these one-second steps must take the swarm's state in a state round,
        // which its 5 or 10 Mbit/s uplink makes last far longer than a step.
        std::vector<SwarmPeerProcess *> trainers;
        for (const char *name : {"public", "home-a1", "home-a2", "home-b"})
            trainers.push_back(&h.startPeer(QString::fromLatin1(name), QStringList(args) << QStringLiteral("--host")
                                                                                         << address(name) << QStringLiteral("--min-peers")
                                                                                         << QStringLiteral("5")));
        std::initializer_list<SwarmPeerProcess *> all{trainers[0], trainers[1], trainers[2], trainers[3], &serve};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({trainers[0], trainers[1], trainers[2], trainers[3]}); }, 240), all);

        // Reachability found out, not configured: home-b (trainers[3]) through router b's UPnP.
        const auto behindUpnp = [&](std::size_t i) { return m_upnp && i == 3; };
        SWARM_VERIFY(trainers[0]->logText().contains(QStringLiteral("reachability reachable")), {trainers[0]});
        for (std::size_t i = 1; i < 4; ++i)
            SWARM_VERIFY(trainers[i]->logText().contains(QStringLiteral("client mode from now on")) != behindUpnp(i),
                         {trainers[i]});
        if (m_upnp) {
            const auto routerB = QString::fromStdString(m_net->routerAddress(1));
            SWARM_VERIFY(trainers[3]->logText().contains(QStringLiteral("the router maps tcp://") + routerB), {trainers[3]});
            SWARM_VERIFY(trainers[3]->logText().contains(QStringLiteral("reachability reachable")), {trainers[3]});
        }

        std::vector<std::map<long, nlohmann::json>> steps;
        for (auto *t : trainers)
            steps.push_back(byStep(*t));
        for (std::size_t i = 0; i < trainers.size(); ++i) {
            SWARM_VERIFY(steps[i].size() == 8, all);
            long averaged = 0;
            for (const auto &[step, e] : steps[i])
                averaged += step > 2 && e.value("averaged", false) ? 1 : 0;
            SWARM_VERIFY(averaged >= 6, all); // every step after the first two (>= 90% of 6)
            // Behind NAT without a mapping: client mode, never a shard. The public trainer
            // reduces one; the one behind UPnP does while its measured upload earns it one (its
            // 10 Mbit/s against serve's and the public trainer's, it may fall under the minimum).
            long reduced = 0;
            for (const auto &[step, e] : steps[i])
                reduced += e.value("shard_elements", 0L) > 0 ? 1 : 0;
            SWARM_VERIFY((reduced == 0) == (i > 0 && !behindUpnp(i)), all);
            SWARM_VERIFY(i != 0 || steps[i].at(8).value("shard_elements", 0L) > 0, all);
        }
        // Identical parameters after every step that all four averaged in one complete group, up
        // to the first step at which they did not: two groups at one epoch (two leaders, each
        // gathering part of the swarm when DHT declarations arrive late, as they do on a loaded
        // machine) leave each group with its own parameters, and without periodic state
        // averaging nothing reconciles them (a known limit of the matchmaking; see PROTOCOL).
        long identical = 0, together = 0;
        for (const auto &[step, e] : steps[0]) {
            bool whole = true;
            for (const auto &s : steps)
                whole = whole && s.count(step) && s.at(step).value("group_size", 0) == 5
                        && s.at(step).value("complete", false);
            if (!whole)
                break;
            ++together;
            bool same = true;
            for (std::size_t i = 1; i < steps.size(); ++i)
                same = same && steps[i].at(step).value("params_sha", std::string()) == e.value("params_sha", std::string());
            identical += same ? 1 : 0;
        }
        // Each trainer measured its own upload in its rounds (the kernel's count of acknowledged
        // bytes over busy time): its tbf rate, less TCP's and the framing's overhead.
        const std::vector<std::pair<double, double>> uplinks{{5, 50}, {7, 10}, {3.5, 5}, {6, 10}};
        for (std::size_t i = 0; i < trainers.size(); ++i) {
            const double mbit = steps[i].at(8).value("upload_mbit", -1.0);
            qInfo("%s measured %.2f Mbit/s", qPrintable(trainers[i]->name), mbit);
            SWARM_VERIFY(mbit >= uplinks[i].first && mbit <= uplinks[i].second, {trainers[i]});
        }
        qInfo("%ld steps in one whole group before any split, %ld with identical parameters", together, identical);
        SWARM_VERIFY(together >= 3 && identical == together, all);
        serve.stopGracefully();
    }
};

QTEST_GUILESS_MAIN(TestHomeInternet)
#include "tst_homeinternet.moc"
