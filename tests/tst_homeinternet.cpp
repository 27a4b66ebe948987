// Volunteers on an emulated internet (tests/support/EmulatedInternet.h): the lead's
// `dedloc-lead serve` and one reachable trainer with public addresses, three trainers behind two
// home routers that masquerade (NAT, no port forward) on asymmetric links (50/10 and 10/2
// Mbit/s; 8-bit gradients, 1.3 MB a step). Router b runs a real UPnP-IGD / NAT-PMP daemon
// (miniupnpd; the public side then uses a non-private /24 that never leaves the namespaces).
// Nobody tells the trainers what their network is: the one behind router b asks it for port
// mappings, is reached through them, and leads or reduces like a public peer; the two behind
// router a learn that nobody can connect back and run in client mode by themselves; serve leads
// and reduces for them. The one behind 10/2 joins the running swarm late: its 15 MB of state
// take longer to download than several steps, so it downloads once and replays the averaged
// steps it missed. Judged by the trainers' metrics and logs: averaged steps, identical
// parameters, the upload each measured. A second case kills the reachable trainer with SIGKILL
// in the middle of a round: the two behind NAT hold one model at every averaged step after it.
// Root only: skipped with the reason otherwise.
#include "EmulatedInternet.h"
#include "SwarmHarness.h"

#include <QTemporaryDir>
#include <QRegularExpression>
#include <QTest>

#include <algorithm>
#include <memory>
#include <set>
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
            m_hosts[QStringLiteral("home-a2")] = m_net->addVolunteer(a, {10, 2});
            m_hosts[QStringLiteral("home-b")] = m_net->addVolunteer(b, {50, 10});
        } catch (const std::exception &e) { // e.g. a container without CAP_NET_ADMIN or NAT support
            QSKIP(qPrintable(QStringLiteral("the emulated internet cannot be built here: %1").arg(QString::fromUtf8(e.what()))));
        }
    }

    void cleanupTestCase() { m_net.reset(); }

    void volunteersBehindNatAverageThroughTheServer()
    {
        const auto root = std::filesystem::path(m_tmp.path().toStdString());
        SwarmHarness h(m_app, writeRun(root), root / "peers");
        // No periodic state rounds: this test is about the gradients' rounds and the joiner.
        const QStringList stateEvery{QStringLiteral("--average-state-every"), QStringLiteral("0")};
        auto &serve = startServe(h, stateEvery);
        SWARM_VERIFY(serveReady(serve), {&serve});
        // A gradient up a 2 Mbit/s link takes seconds: the reference timeouts, not the harness's.
        const QStringList args = QStringList{QStringLiteral("--steps"), QString::number(Steps), QStringLiteral("--sender-timeout"),
                                             QStringLiteral("15"), QStringLiteral("--reducer-timeout"), QStringLiteral("30")}
                                 + stateEvery;
        auto start = [&](const char *name, const QStringList &extra) {
            return &h.startPeer(QString::fromLatin1(name), QStringList(args) << QStringLiteral("--host") << address(name) << extra);
        };
        // Three at once, each computing only once it has seen serve and the others (--min-peers
        // 4, a start gate); home-a2, behind 10/2 Mbit/s, joins the running swarm later, when its
        // 15 MB of state takes longer to download than several steps.
        const QStringList gate{QStringLiteral("--min-peers"), QStringLiteral("4")};
        std::vector<SwarmPeerProcess *> trainers{start("public", gate), start("home-a1", gate), nullptr, start("home-b", gate)};
        auto earlyFour = {trainers[0], trainers[1], trainers[3], &serve};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return byStep(*trainers[0]).size() >= 3; }, 120), earlyFour);
        trainers[2] = start("home-a2", {});
        std::initializer_list<SwarmPeerProcess *> all{trainers[0], trainers[1], trainers[2], trainers[3], &serve};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({trainers[0], trainers[1], trainers[2], trainers[3]}); }, 300), all);
        checkReachability(trainers);
        if (QTest::currentTestFailed())
            return;

        std::vector<std::map<long, nlohmann::json>> steps;
        for (auto *t : trainers)
            steps.push_back(byStep(*t));
        for (std::size_t i = 0; i < trainers.size(); ++i) {
            // The three from the start: every step after the first two averaged (>= 90%); the
            // joiner: every step from its first on.
            SWARM_VERIFY(!steps[i].empty(), all);
            const long first = i == 2 ? steps[i].begin()->first : 3;
            checkEveryStepTakenOrReplayed(*trainers[i], steps[i], i == 2 ? first : 1, all);
            if (QTest::currentTestFailed())
                return;
            long averaged = 0, due = 0;
            for (const auto &[step, e] : steps[i]) {
                due += step >= first ? 1 : 0;
                averaged += step >= first && e.value("averaged", false) ? 1 : 0;
            }
            SWARM_VERIFY(due > 0 && averaged * 10 >= due * 9, all);
            // Behind NAT without a mapping: client mode, never a shard. The public trainer
            // reduces one; the one behind UPnP does while its measured upload earns it one.
            long reduced = 0;
            for (const auto &[step, e] : steps[i])
                reduced += e.value("shard_elements", 0L) > 0 ? 1 : 0;
            SWARM_VERIFY((reduced == 0) == (i == 1 || i == 2 || (i == 3 && !m_upnp)), all);
            SWARM_VERIFY(i != 0 || steps[i].rbegin()->second.value("shard_elements", 0L) > 0, all);
        }
        checkTheJoiner(*trainers[2], steps);
        checkIdenticalParameters(steps, all);
        if (QTest::currentTestFailed())
            return;
        // Each trainer measured its own upload in its rounds (the kernel's count of acknowledged
        // bytes over busy time): at most its tbf rate, less TCP's and the framing's overhead; the
        // one behind UPnP sends results that its receivers' downlinks and the others' flows also
        // pace (5.3-9.5 measured).
        const std::vector<std::pair<double, double>> uplinks{{5, 50}, {7, 10}, {1.4, 2}, {3.5, 10}};
        for (std::size_t i = 0; i < trainers.size(); ++i) {
            const double mbit = steps[i].rbegin()->second.value("upload_mbit", -1.0);
            qInfo("%s measured %.2f Mbit/s", qPrintable(trainers[i]->name), mbit);
            SWARM_VERIFY(mbit >= uplinks[i].first && mbit <= uplinks[i].second, {trainers[i]});
        }
        serve.stopGracefully();
    }

    // A reachable reducer killed with SIGKILL in the middle of a round: the round ends without
    // its shard, and the survivors (behind NAT, averaging through serve) hold one model again
    // from the next step on, and at every averaged step after that.
    void aReducerKilledMidRoundLeavesOneModel()
    {
        const auto root = std::filesystem::path(m_tmp.path().toStdString()) / "kill";
        std::filesystem::create_directories(root);
        SwarmHarness h(m_app, writeRun(root), root / "peers");
        const QStringList stateEvery{QStringLiteral("--average-state-every"), QStringLiteral("0")};
        auto &serve = startServe(h, stateEvery);
        SWARM_VERIFY(serveReady(serve), {&serve});
        constexpr long KillSteps = 14;
        const QStringList args = QStringList{QStringLiteral("--steps"), QString::number(KillSteps), QStringLiteral("--min-peers"),
                                             QStringLiteral("4"), QStringLiteral("--sender-timeout"), QStringLiteral("15"),
                                             QStringLiteral("--reducer-timeout"), QStringLiteral("30")}
                                 + stateEvery;
        auto start = [&](const char *name) {
            return &h.startPeer(QString::fromLatin1(name), QStringList(args) << QStringLiteral("--host") << address(name));
        };
        auto *reducer = start("public");
        auto *a1 = start("home-a1");
        auto *b = start("home-b");
        // Mid-round: the reducer is in a group whose step it has not recorded yet.
        const QRegularExpression grouped(QStringLiteral("(?:led|joined) group e(\\d+)-"));
        long killedAt = -1;
        SWARM_VERIFY(SwarmHarness::waitFor(
                         [&] {
                             long inGroup = -1;
                             for (auto it = grouped.globalMatch(reducer->logText()); it.hasNext();)
                                 inGroup = std::max(inGroup, it.next().captured(1).toLong());
                             if (inGroup < 4 || reducer->lastStep() > inGroup)
                                 return false;
                             reducer->kill9();
                             killedAt = inGroup;
                             return true;
                         },
                         180),
                     {reducer, a1, b, &serve});
        qInfo("killed the reducer in its round of epoch %ld", killedAt);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({a1, b}); }, 300), {a1, b, &serve});
        const auto sa = byStep(*a1), sb = byStep(*b);
        // Every step after the repair: averaged by both, one model. (Each survivor used to take
        // the run's last one or two steps alone when serve's record said it was syncing: the DHT
        // nodes kept each trainer's first progress record, so neither read the other's.)
        long together = 0;
        for (long step = killedAt + 2; step <= KillSteps; ++step) {
            SWARM_VERIFY(sa.count(step) && sb.count(step), {a1, b, &serve});
            SWARM_VERIFY(sa.at(step).value("averaged", false) && sb.at(step).value("averaged", false), {a1, b, &serve});
            SWARM_VERIFY(sa.at(step).value("params_sha", std::string()) == sb.at(step).value("params_sha", std::string("-")),
                         {a1, b, &serve});
            ++together;
        }
        qInfo("%ld steps after the kill with one model", together);
        SWARM_VERIFY(together >= 4, {a1, b, &serve});
        serve.stopGracefully();
    }

  private:
    // Long enough for the joiner to average after it caught up: on kept connections the swarm's
    // rounds got faster: at 22 steps the joiner was ready only for the last one, at 32 by step 28.
    static constexpr long Steps = 40;

    // 8-bit blocks on the wire: the averaged gradient of a step is 1.3 MB, the state 15 MB.
    static std::filesystem::path writeRun(const std::filesystem::path &dir)
    {
        return writeSignedTinyRun(dir, 64, 1000, dedloc::Compression::Blockwise8Bit);
    }

    [[nodiscard]] QString address(const char *name) const
    {
        return QString::fromStdString(m_net->addressOf(m_hosts.at(QString::fromLatin1(name))));
    }

    // Every process of `h` in its host's namespace, bootstrapping from serve's host; starts serve
    // (`extra` added).
    SwarmPeerProcess &startServe(SwarmHarness &h, const QStringList &extra)
    {
        h.setLauncher([this](const QString &name) {
            return QStringList{QStringLiteral("ip"), QStringLiteral("netns"), QStringLiteral("exec"),
                               QString::fromStdString(m_net->namespaceOf(m_hosts.at(name)))};
        });
        h.setBootstrapHost(address("serve"));
        return h.startLeadServe(m_lead, QStringList(extra) << QStringLiteral("--host") << address("serve"));
    }

    // Whether serve can be asked to connect back: its DHT is up, then its donor advert is out.
    static bool serveReady(const SwarmPeerProcess &serve)
    {
        if (!SwarmHarness::waitFor([&] { return serve.logText().contains(QStringLiteral("DHT bootstrap")); }, 60))
            return false;
        QTest::qWait(1500);
        return true;
    }

    // Every step from `from` to the last was recorded, or the peer fell behind for it and
    // replayed that epoch's averaged update from its group (a peer that found no group while the
    // others stepped: "the swarm stepped past epoch e", then "replayed ... epochs a-b"), which
    // leaves its parameters those of the swarm without a step record. At most 3 such steps:
    // more means the peer did not take part.
    static void checkEveryStepTakenOrReplayed(SwarmPeerProcess &peer, const std::map<long, nlohmann::json> &steps,
                                              long from, std::initializer_list<SwarmPeerProcess *> all)
    {
        std::set<long> replayedSteps; // epoch e replayed: the step to e + 1
        const QRegularExpression replayed(QStringLiteral("replayed the averaged steps of epochs (\\d+)-(\\d+)"));
        for (auto it = replayed.globalMatch(peer.logText()); it.hasNext();) {
            const auto m = it.next();
            for (long e = m.captured(1).toLong(); e <= m.captured(2).toLong(); ++e)
                replayedSteps.insert(e + 1);
        }
        long missing = 0;
        for (long step = from; step <= Steps; ++step) {
            if (steps.count(step))
                continue;
            ++missing;
            if (!replayedSteps.count(step))
                qWarning("%s has no record of step %ld and did not replay it", qPrintable(peer.name), step);
            SWARM_VERIFY(replayedSteps.count(step) == 1, all);
        }
        if (missing > 0)
            qInfo("%s replayed %ld step(s) instead of taking them", qPrintable(peer.name), missing);
        SWARM_VERIFY(missing <= 3, all);
    }

    // Reachability found out, not configured: the public trainer is reachable, home-b through
    // router b's UPnP mapping, the two behind router a in client mode by themselves.
    void checkReachability(const std::vector<SwarmPeerProcess *> &trainers)
    {
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
    }

    // The joiner behind 10/2 Mbit/s downloaded the state once (no download loop), replayed the
    // steps the swarm took meanwhile, averaged in a group of the second epoch after the one it
    // was first ready at, or sooner (the replay right after the download; the swarm steps while
    // each update downloads, so a joiner that only looks for a group once its replay ended finds
    // it formed, and replays again; one whose replay ends as the group of its epoch seals misses
    // it, and replays that epoch's update, which exists only once that round ended, during the
    // next), and held its group's parameters after its first step.
    static void checkTheJoiner(SwarmPeerProcess &joiner, const std::vector<std::map<long, nlohmann::json>> &steps)
    {
        const auto log = joiner.logText();
        SWARM_VERIFY(log.count(QStringLiteral("downloaded state of epoch")) == 1, {&joiner});
        const auto downloaded = QRegularExpression(QStringLiteral("downloaded state of epoch (\\d+)")).match(log);
        const auto replayed =
            QRegularExpression(QStringLiteral("now at epoch (\\d+)")).match(log, downloaded.capturedEnd());
        const long ready = replayed.hasMatch() ? replayed.captured(1).toLong() : downloaded.captured(1).toLong();
        const long first = steps[2].begin()->first;
        qInfo("the joiner was ready at epoch %ld and recorded its first step at %ld", ready, first);
        SWARM_VERIFY(ready > 0 && first <= ready + 3 && steps[2].begin()->second.value("averaged", false), {&joiner});
        // Its first complete step (the first, unless that was the round the killed reducer left
        // incomplete): the parameters of a trainer it averaged with, bit for bit. That is a
        // trainer of its own group, or, where two groups formed at that epoch and the joiner's
        // group merged with others or took their merge (its step's merged groups or merged peers
        // are not its own group alone), a trainer of the merge. Either way a joiner whose
        // downloaded or replayed state was off holds other parameters.
        auto c = std::find_if(steps[2].begin(), steps[2].end(), [](const auto &s) { return s.second.value("complete", false); });
        SWARM_VERIFY(c != steps[2].end() && c->first <= first + 1, {&joiner});
        const auto &[step, e] = *c;
        const bool merged = e.value("merged_groups", 1) > 1 || e.value("merged_peers", 0) != e.value("group_size", 0);
        bool sameAsItsGroup = false;
        for (std::size_t i : {0, 1, 3})
            if (steps[i].count(step) &&
                (merged || steps[i].at(step).value("group_size", 0) == e.value("group_size", -1)))
                sameAsItsGroup = sameAsItsGroup
                                 || steps[i].at(step).value("params_sha", std::string()) == e.value("params_sha", std::string("?"));
        if (!sameAsItsGroup)
            qWarning("the joiner's step %ld (group of %d, %d merged group(s)) matches no trainer's parameters", step,
                     e.value("group_size", 0), e.value("merged_groups", 0));
        SWARM_VERIFY(sameAsItsGroup, {&joiner});
    }

    // Identical parameters after every step that every trainer then running averaged in one
    // complete group with serve, up to the first step at which they did not: two groups at one
    // epoch (two leaders, each gathering part of the swarm when DHT declarations arrive late, as
    // they do on a loaded machine) leave each group with its own parameters, and without
    // periodic state averaging nothing reconciles them (a known limit of the matchmaking).
    static void checkIdenticalParameters(const std::vector<std::map<long, nlohmann::json>> &steps,
                                         std::initializer_list<SwarmPeerProcess *> all)
    {
        long identical = 0, together = 0;
        for (const auto &[step, e] : steps[0]) {
            std::vector<const nlohmann::json *> present;
            for (const auto &s : steps)
                if (s.count(step))
                    present.push_back(&s.at(step));
            bool whole = true, same = true;
            for (const auto *p : present) {
                whole = whole && p->value("group_size", 0) == static_cast<int>(present.size()) + 1 && p->value("complete", false);
                same = same && p->value("params_sha", std::string()) == e.value("params_sha", std::string());
            }
            if (!whole)
                break;
            ++together;
            identical += same ? 1 : 0;
        }
        qInfo("%ld steps in one whole group before any split, %ld with identical parameters", together, identical);
        SWARM_VERIFY(together >= 3 && identical == together, all);
    }
};

QTEST_GUILESS_MAIN(TestHomeInternet)
#include "tst_homeinternet.moc"
