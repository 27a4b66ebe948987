// A hostile trainer in an open run, end to end: real `dedloc` processes on loopback train the
// tiny run (open, so its reducers use CenteredClip, averaging/RobustAggregation.h) beside
// tests/hostile's dedloc-hostile-peer, which sends its true gradient times -1000 (an ascent
// direction, a thousand times the honest size). The honest trainers must keep identical, finite
// parameters at every step, ban the hostile peer from their own reducers' verdicts (its parts are
// outliers in every round: an offence at its 3rd, a ban at its 4th), and never ban each other.
// Liars about progress are here too: samples no peer computes, the whole batch at once, and
// epochs ahead of their own.
#include "SwarmHarness.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <fstream>

using namespace dedloc;
using namespace dedloc::test;

class TestHostilePeer : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_tmp;
    std::filesystem::path m_app = DEDLOC_APP;
    std::filesystem::path m_hostile = DEDLOC_HOSTILE_PEER;

    static std::string peerIdOf(const SwarmPeerProcess &p)
    {
        const auto steps = p.events();
        return steps.empty() ? std::string() : steps.front().value("peer_id", std::string());
    }

    // A monitor, three honest trainers and the hostile one (`attack`), all waiting for the four
    // trainers; the honest ones stop after `steps` steps. `more` is added to every trainer's
    // arguments (a later value of an option wins).
    struct Swarm {
        SwarmPeerProcess &monitor, &p1, &p2, &p3, &hostile;
    };
    // `more`: every peer's further arguments; `hostileMore`: the hostile peer's alone.
    Swarm startSwarm(SwarmHarness &h, int steps, const QString &attack, const QStringList &more = {},
                     const QStringList &hostileMore = {})
    {
        auto &monitor = h.startMonitor();
        const QStringList args = QStringList{QStringLiteral("--steps"), QString::number(steps), QStringLiteral("--min-peers"),
                                             QStringLiteral("4"), QStringLiteral("--average-state-every"), QStringLiteral("0")}
                                 + more;
        auto &p1 = h.startPeer(QStringLiteral("p1"), args);
        auto &p2 = h.startPeer(QStringLiteral("p2"), args);
        auto &p3 = h.startPeer(QStringLiteral("p3"), args);
        auto &hostile = h.startPeer(QStringLiteral("hostile"),
                                    QStringList(args) << QStringLiteral("--attack") << attack << hostileMore, m_hostile);
        m_args = args;
        return {monitor, p1, p2, p3, hostile};
    }
    QStringList m_args; // the trainers' arguments of the last startSwarm

    // Whether the three trainers stepped 1 .. steps, each step with the same parameters.
    static bool sameParametersAtEveryStep(const SwarmPeerProcess &p1, const SwarmPeerProcess &p2,
                                          const SwarmPeerProcess &p3, long steps)
    {
        const auto s1 = byStep(p1), s2 = byStep(p2), s3 = byStep(p3);
        for (long step = 1; step <= steps; ++step) {
            if (!s1.count(step) || !s2.count(step) || !s3.count(step))
                return false;
            const auto sha = s1.at(step).value("params_sha", std::string("1"));
            if (sha != s2.at(step).value("params_sha", std::string("2"))
                || sha != s3.at(step).value("params_sha", std::string("3")))
                return false;
        }
        return true;
    }

  private Q_SLOTS:
    void initTestCase() { m_tmp.setAutoRemove(qEnvironmentVariableIsEmpty("DEDLOC_KEEP_TEST_DIR")); }

    void scaledSignFlippedGradientsAreClippedAndBanned()
    {
        const auto d = std::filesystem::path(m_tmp.path().toStdString());
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64, 1000), d / "peers");
        auto [monitor, p1, p2, p3, evil] = startSwarm(h, 8, QStringLiteral("scale:-1000"));
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &evil, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 240), all);
        const auto evilId = peerIdOf(evil);
        QVERIFY(!evilId.empty());
        SWARM_VERIFY(evil.logText().contains(QStringLiteral("attacks with scale:-1000")), all);

        const auto s1 = byStep(p1), s2 = byStep(p2), s3 = byStep(p3);
        for (long step = 1; step <= 8; ++step) {
            SWARM_VERIFY(s1.count(step) && s2.count(step) && s3.count(step), all);
            const auto sha = s1.at(step).value("params_sha", std::string());
            QVERIFY(!sha.empty());
            QCOMPARE(s2.at(step).value("params_sha", std::string()), sha);
            QCOMPARE(s3.at(step).value("params_sha", std::string()), sha);
            // A finite loss; or none, only where the trainer computed nothing for the step (it
            // had just caught up with the swarm when its group formed: a loaded machine).
            for (const auto *s : {&s1, &s2, &s3}) {
                const auto &e = s->at(step);
                SWARM_VERIFY(e.contains("loss") ? std::isfinite(e.value("loss", NAN)) : e.value("samples", -1L) == 0, all);
            }
        }
        // The steps descend: the honest trainers' losses at steps 7-8 are below those at 1-2 (with
        // the mean, the hostile peer's ascent direction would dominate every step).
        const auto meanLoss = [&](long first, long last) {
            double sum = 0.0;
            int n = 0;
            for (const auto *s : {&s1, &s2, &s3})
                for (long step = first; step <= last; ++step)
                    if (s->at(step).contains("loss")) {
                        sum += s->at(step).value("loss", 0.0);
                        ++n;
                    }
            return n > 0 ? sum / n : NAN;
        };
        const double early = meanLoss(1, 2), late = meanLoss(7, 8);
        // On failure the peers' logs say which groups averaged what (seen once under a full ctest).
        setFailureContext("mean loss of steps 1-2: " + std::to_string(early) + ", of steps 7-8: " + std::to_string(late));
        SWARM_VERIFY(late < early, all);
        setFailureContext("");
        // Each honest trainer keeps its bans for a restart, beside its checkpoints.
        for (const auto *p : {&p1, &p2, &p3}) {
            std::string saved;
            for (const auto &f : std::filesystem::recursive_directory_iterator(p->dataDir))
                if (f.path().filename() == "bans.json")
                    saved = nlohmann::json::parse(std::ifstream(f.path())).dump();
            QVERIFY2(saved.find(evilId) != std::string::npos, qPrintable(p->name + QStringLiteral(": ") + QString::fromStdString(saved)));
        }
        // Each honest trainer's own reducer found the hostile peer's parts far off and banned it;
        // no honest trainer banned another.
        for (const auto *p : {&p1, &p2, &p3}) {
            const auto log = p->logText();
            SWARM_VERIFY(log.contains(QString::fromStdString(evilId.substr(0, 16)) + QStringLiteral(" is banned")), all);
            for (const auto *other : {&p1, &p2, &p3})
                QVERIFY2(!log.contains(QString::fromStdString(peerIdOf(*other).substr(0, 16)) + QStringLiteral(" is banned")),
                         qPrintable(p->name + QStringLiteral(" banned ") + other->name));
        }
    }

    // A record claiming more than twice the target batch is a claim no honest peer makes: every
    // reader refuses it and strikes its signer, three reads ban it, and training goes on.
    void aPeerClaimingMoreThanAnyPeerCanIsBanned()
    {
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / "overclaim";
        std::filesystem::create_directories(d);
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64, 1000), d / "peers");
        // The three honest trainers train once the liar is banned: they wait for three, not four.
        auto [monitor, p1, p2, p3, liar] =
            startSwarm(h, 4, QStringLiteral("claim:256"), {QStringLiteral("--min-peers"), QStringLiteral("3")});
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &liar, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 240), all);
        // Its id from its log: banned at once, it may never step.
        const auto named = QRegularExpression(QStringLiteral("trainer ([0-9a-f]{16})")).match(liar.logText());
        QVERIFY(named.hasMatch());
        const auto liarId = named.captured(1);
        for (const auto *p : {&p1, &p2, &p3}) {
            const auto log = p->logText();
            SWARM_VERIFY(log.contains(QStringLiteral("its progress record claims 256 samples")), all);
            SWARM_VERIFY(log.contains(liarId + QStringLiteral(" is banned")), all);
            for (const auto *other : {&p1, &p2, &p3})
                QVERIFY2(!log.contains(QString::fromStdString(peerIdOf(*other).substr(0, 16)) + QStringLiteral(" is banned")),
                         qPrintable(p->name + QStringLiteral(" banned ") + other->name));
        }
    }

    // Two colluders climb by turns: one's record claims the epoch one above its own, the other's
    // two above, so each claim is within one of another record's. Corroboration alone believed the
    // higher: the honest trainers resynced to an epoch that no donor serves and waited for one for
    // good. The swarm's epoch is the one at least half of the votes hold (ProgressTracker.h): the
    // honest trainers and the monitor outvote the pair and train on, every step a group's.
    void colludersClaimingEpochsAheadCannotMoveTheSwarm()
    {
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / "ahead";
        std::filesystem::create_directories(d);
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64, 1000), d / "peers");
        // Ten steps: the second liar starts last, and an honest trainer must read its record
        // while it still steps (five were over before it did, once, in a fresh Debian run).
        auto [monitor, p1, p2, p3, a] =
            startSwarm(h, 10, QStringLiteral("ahead:1"), {QStringLiteral("--min-peers"), QStringLiteral("3")});
        auto &b = h.startPeer(QStringLiteral("hostile2"),
                              QStringList(m_args) << QStringLiteral("--attack") << QStringLiteral("ahead:2"), m_hostile);
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &a, &b, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 240), all);
        SWARM_VERIFY(a.logText().contains(QStringLiteral("attacks with ahead:1")), all);
        SWARM_VERIFY(b.logText().contains(QStringLiteral("attacks with ahead:2")), all);
        for (const auto *p : {&p1, &p2, &p3}) {
            SWARM_VERIFY(!p->logText().contains(QStringLiteral("waiting for a state donor")), all);
            // It reached the last epoch, by its own steps in groups (the liars, members too, leave
            // rounds incomplete at times: a trainer the swarm then stepped past catches up to an
            // epoch the honest peers hold).
            const auto steps = byStep(*p);
            const auto alone = std::count_if(steps.begin(), steps.end(),
                                             [](const auto &s) { return s.second.value("group_size", 0) < 2; });
            QCOMPARE(lastEpoch(p->metrics), 10L);
            QVERIFY2(!steps.empty() && alone <= 1,
                     qPrintable(p->name + QStringLiteral(": %1 steps, %2 alone").arg(steps.size()).arg(alone)));
            // and it read both liars' records while it stepped: six live records, the monitor's too
            QVERIFY2(std::any_of(steps.begin(), steps.end(), [](const auto &s) { return s.second.value("peers", 0) >= 6; }),
                     qPrintable(p->name + QStringLiteral(" never saw both liars")));
        }
    }

    // A peer whose record claims twice the target batch at every epoch (the whole batch at once, at
    // 1e6 samples/s) would have every honest trainer step on the few samples it holds when it reads
    // the claim. An open run's tracker counts a rate at most 8 x the swarm's median, and samples at
    // most that rate over the time since the epoch began (ProgressTracker.h): with three honest
    // trainers at about one rate r, a batch fills at about 11 r, so about 3/11 of it is theirs
    // (less the 8 r x 1 s of slack; the target is large beside that, as a real run's is). Measured
    // on 2 cores: 11-19% of the target with the bound, 0.6-2% without it (the step on what each
    // honest trainer computed before it read the claim); judged at 5%.
    // The first step is not judged: its epoch was under way before anyone saw it begin.
    void aPeerClaimingTheWholeBatchCannotShrinkTheSteps()
    {
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / "claim";
        std::filesystem::create_directories(d);
        constexpr long Target = 8192;
        SwarmHarness h(m_app, writeSignedTinyRun(d, Target, 1000), d / "peers");
        // The liar decides every step at once. A member joins a group when its ETA falls under the
        // matchmaking time (4 s here) and sends its parts when it decides: as in the product (15 s
        // against 5 s), the sender timeout exceeds the matchmaking time, or the liar, reducing a
        // shard, would exclude honest members that are still accumulating (the harness's 3 s did,
        // in 4 of 25 steps).
        auto [monitor, p1, p2, p3, liar] = startSwarm(h, 6, QStringLiteral("claim:%1").arg(2 * Target),
                                                      {QStringLiteral("--sender-timeout"), QStringLiteral("8"),
                                                       QStringLiteral("--reducer-timeout"), QStringLiteral("12")});
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &liar, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 240), all);
        SWARM_VERIFY(liar.logText().contains(QStringLiteral("attacks with claim:")), all);

        std::vector<long> batches;
        int identical = 0; // complete steps at which the honest parameters were compared
        const auto s1 = byStep(p1), s2 = byStep(p2), s3 = byStep(p3);
        for (long step = 2; step <= 6; ++step) {
            for (const auto *s : {&s1, &s2, &s3})
                if (s->count(step))
                    batches.push_back(s->at(step).value("batch_samples", 0L));
            if (!(s1.count(step) && s2.count(step) && s3.count(step)))
                continue; // a trainer that caught up instead has no event of this step
            // Compared are the complete rounds in which the three were together (with the liar or
            // without it): a round that ends incomplete leaves each member its own values for the
            // missing shard.
            const auto complete = [&](const std::map<long, nlohmann::json> &s) { return s.at(step).value("complete", false); };
            const int size = s1.at(step).value("group_size", 0);
            if (!(complete(s1) && complete(s2) && complete(s3)) || size < 3
                || s2.at(step).value("group_size", 0) != size || s3.at(step).value("group_size", 0) != size)
                continue;
            ++identical;
            const auto sha = s1.at(step).value("params_sha", std::string());
            QVERIFY(!sha.empty());
            QCOMPARE(s2.at(step).value("params_sha", std::string()), sha);
            QCOMPARE(s3.at(step).value("params_sha", std::string()), sha);
        }
        QVERIFY2(batches.size() >= 5, qPrintable(QStringLiteral("%1 step events of steps 2-6").arg(batches.size())));
        std::sort(batches.begin(), batches.end());
        const long median = batches[batches.size() / 2];
        QString all_;
        for (long b : batches)
            all_ += QString::number(b) + QLatin1Char(' ');
        qInfo("honest batches of steps 2-6: %s; %d complete rounds of the three compared", qPrintable(all_), identical);
        // Some were compared. (Five steps cannot tell the rates apart: with the harness's 3 s, five
        // runs had 4 incomplete rounds in 25 steps; with 8 s, five runs had none in 25.)
        QVERIFY2(identical >= 2, qPrintable(QStringLiteral("%1 of steps 2-6 were complete rounds of the three").arg(identical)));
        // and the claim landed: the honest trainers did not step on the target's worth of their own
        QVERIFY2(median >= Target / 20 && median <= Target / 2, qPrintable(QStringLiteral("median batch %1 of target %2: %3").arg(median).arg(Target).arg(all_)));
    }

    // A trainer that declares 100 000 Mbit/s beside three that measured their link (loopback:
    // about 200) would reduce the whole vector, uncapped, and decide every result; an open run
    // caps its share at twice an even one (LoadBalancing.h fairShareCap): in a group of the four
    // every honest member reduces a shard and the liar at most half the vector, i.e. no more
    // than the three honest shards together (however their measured links differ: a loaded
    // machine measures less on some), and the honest trainers hold one model.
    void aBandwidthLiarReducesAtMostTwiceAFairShare()
    {
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / "bandwidth";
        std::filesystem::create_directories(d);
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64, 1000), d / "peers");
        auto [monitor, p1, p2, p3, liar] = startSwarm(h, 6, QStringLiteral("bandwidth:100000"));
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &liar, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 240), all);
        const std::map<long, nlohmann::json> honest[] = {byStep(p1), byStep(p2), byStep(p3)};
        int compared = 0;
        for (const auto &[step, e] : byStep(liar)) {
            const auto inTheGroup = [&, step = step](const std::map<long, nlohmann::json> &s) {
                return s.count(step) && s.at(step).value("group_size", 0L) == 4;
            };
            if (e.value("group_size", 0L) != 4 || !std::all_of(std::begin(honest), std::end(honest), inTheGroup))
                continue; // the four, the only peers that average, in one group
            const long its = e.value("shard_elements", -1L);
            long theirs = 0;
            std::string context = "step " + std::to_string(step) + ": the liar's shard " + std::to_string(its) + ", honest";
            for (const auto &s : honest) {
                const long mine = s.at(step).value("shard_elements", -1L);
                context += " " + std::to_string(mine);
                SWARM_VERIFY(mine > 0, all);
                theirs += mine;
            }
            setFailureContext(context);
            SWARM_VERIFY(its >= 0 && its <= theirs + 4, all); // half the vector, up to rounding
            ++compared;
        }
        setFailureContext("");
        qInfo("%d steps in one group of four with the liar compared", compared);
        SWARM_VERIFY(compared >= 3, all);
        SWARM_VERIFY(sameParametersAtEveryStep(p1, p2, p3, 6), all);
    }

    // A reducer that returns its shard's average times -1 (its sketches of the round stay true):
    // its view of its shard fails the check at every honest member a while after each round
    // (ResultAuditor, averaging/ResultCheck.h), three such strikes ban it, and no honest trainer
    // strikes another. Without the check nothing in its messages is wrong: nobody bans it.
    // Publishing no check record escapes nothing: a silent reducer is struck as one that fails.
    void aReducerLyingAboutItsResultIsBanned_data()
    {
        QTest::addColumn<QString>("attack");
        QTest::addColumn<QString>("verdict");
        QTest::newRow("its view published") << QStringLiteral("result:-1") << QStringLiteral("fails the check");
        QTest::newRow("its view withheld") << QStringLiteral("silentresult:-1")
                                           << QStringLiteral("published no check record");
    }
    void aReducerLyingAboutItsResultIsBanned()
    {
        QFETCH(QString, attack);
        QFETCH(QString, verdict);
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / ("result-" + std::to_string(attack.size()));
        std::filesystem::create_directories(d);
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64, 1000), d / "peers");
        auto [monitor, p1, p2, p3, liar] = startSwarm(h, 24, attack);
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &liar, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 300), all);
        const auto liarId = peerIdOf(liar);
        QVERIFY(!liarId.empty());
        for (const auto *p : {&p1, &p2, &p3}) {
            const auto log = p->logText();
            SWARM_VERIFY(log.contains(verdict), all);
            SWARM_VERIFY(log.contains(QString::fromStdString(liarId.substr(0, 16)) + QStringLiteral(" is banned")), all);
            for (const auto *other : {&p1, &p2, &p3}) {
                const auto id = QString::fromStdString(peerIdOf(*other).substr(0, 8));
                QVERIFY2(!log.contains(QStringLiteral("reducer ") + id + QStringLiteral(" fails")),
                         qPrintable(p->name + QStringLiteral(" failed the result of ") + other->name));
            }
        }
        SWARM_VERIFY(sameParametersAtEveryStep(p1, p2, p3, 24), all);
    }

    // A leader that accepts joins and never begins, and declares early so that it is asked
    // first: its followers give up on it at its deadline plus the request timeout, ask no more of
    // it that epoch and form their group without it; each hold is a strike, so every honest
    // trainer bans it at its third hold. The holder is an auxiliary peer, which matchmakes at
    // every epoch of the trainers (a trainer holder steps alone after each hold, runs ahead of
    // the swarm and meets it only now and then: soaked in bench/chaos.sh). The honest trainers
    // average every step after the first together, on the same parameters.
    void aLeaderThatNeverBeginsCannotHoldTheSwarm()
    {
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / "neverbegin";
        std::filesystem::create_directories(d);
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64, 1000), d / "peers");
        const long steps = 13;
        auto [monitor, p1, p2, p3, holder] =
            startSwarm(h, steps, QStringLiteral("neverbegin"), {}, {QStringLiteral("--role"), QStringLiteral("auxiliary")});
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &holder, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 300), all);
        SWARM_VERIFY(holder.logText().contains(QStringLiteral("without a BEGIN")), all); // it did hold followers
        // It never averages (no step events): its id from its start line.
        const auto started = QRegularExpression(QStringLiteral("auxiliary ([0-9a-f]{16}) on DHT port")).match(holder.logText());
        SWARM_VERIFY(started.hasMatch(), all);
        const auto holderLong = started.captured(1);
        const auto holderId = holderLong.left(8);
        int gaveUp = 0;
        for (const auto *p : {&p1, &p2, &p3}) {
            gaveUp += p->logText().contains(QStringLiteral("leader ") + holderId + QStringLiteral(" never began")) ? 1 : 0;
            SWARM_VERIFY(p->logText().contains(holderLong + QStringLiteral(" is banned")), all);
            long together = 0;
            for (const auto &[step, e] : byStep(*p))
                together += step >= 2 && e.value("averaged", false) && e.value("group_size", 0) >= 3 ? 1 : 0;
            SWARM_VERIFY(together == steps - 1, all);
        }
        SWARM_VERIFY(gaveUp == 3, all);
        SWARM_VERIFY(sameParametersAtEveryStep(p1, p2, p3, steps), all);
    }

    // A state donor that serves finite garbage while its records and offers name its true state
    // (the swarm's: it trains as an honest peer). A joiner that takes any part from it finds the
    // state it assembled missing the digest, gets the state from the honest donor and bans the
    // liar (docs/PROTOCOL.md "Several donors at once"); then it averages with the honest trainer
    // and holds its parameters. A joiner that asked the honest donor alone never meets the liar:
    // another joiner is started then, at most three.
    void aDonorServingAnotherStateIsBanned()
    {
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / "donor";
        std::filesystem::create_directories(d);
        SwarmHarness h(m_app, writeSignedTinyRun(d, 1024, 1000), d / "peers"); // steps of seconds
        auto &monitor = h.startMonitor();
        const QStringList args{QStringLiteral("--steps"), QStringLiteral("200"), QStringLiteral("--min-peers"),
                               QStringLiteral("2"), QStringLiteral("--average-state-every"), QStringLiteral("0")};
        auto &p1 = h.startPeer(QStringLiteral("p1"), args);
        auto &liar = h.startPeer(QStringLiteral("hostile"), QStringList(args) << QStringLiteral("--attack")
                                                                              << QStringLiteral("donor:7000"), m_hostile);
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return p1.lastStep() >= 3 && liar.lastStep() >= 3; }, 120),
                     {&p1, &liar, &monitor});
        const auto liarId = QString::fromStdString(peerIdOf(liar).substr(0, 16));
        const auto liarShort = liarId.left(8);
        bool banned = false;
        for (int i = 1; i <= 3 && !banned; ++i) {
            auto &late = h.startPeer(QStringLiteral("late%1").arg(i), args);
            const std::initializer_list<SwarmPeerProcess *> all{&p1, &liar, &monitor, &late};
            SWARM_VERIFY(SwarmHarness::waitFor([&] { return late.events().size() >= 2; }, 180), all);
            late.stopGracefully();
            const auto log = late.logText();
            SWARM_VERIFY(log.contains(QStringLiteral("downloaded state of epoch")), all);
            QVERIFY2(!log.contains(QString::fromStdString(peerIdOf(p1).substr(0, 16)) + QStringLiteral(" is banned")),
                     qPrintable(late.name + QStringLiteral(" banned the honest donor")));
            // It took garbage from the liar (a state from several donors that missed its digest,
            // or the liar's own): then it banned it.
            const bool met = log.contains(QStringLiteral("blamed once a true copy"))
                             || log.contains(QStringLiteral("donor ") + liarShort + QStringLiteral(": state does not match"));
            banned = log.contains(liarId + QStringLiteral(" is banned"));
            SWARM_VERIFY(banned || !met, all);
            const auto sl = byStep(late), s1 = byStep(p1);
            SWARM_VERIFY(!sl.empty() && s1.count(sl.begin()->first), all);
            QCOMPARE(sl.begin()->second.value("params_sha", std::string()),
                     s1.at(sl.begin()->first).value("params_sha", std::string()));
        }
        SWARM_VERIFY(banned, {&p1, &liar, &monitor});
    }

    // A sender whose PARTs carry NaN, or claim more samples than any batch holds: every honest
    // reducer refuses each such part, a strike per part, so the sender is banned in its first
    // round; the others' average goes on without it and no honest trainer strikes another.
    void aSenderOfInvalidPartsIsBanned_data()
    {
        QTest::addColumn<QString>("attack");
        QTest::addColumn<QString>("verdict");
        QTest::newRow("NaN values") << QStringLiteral("nan") << QStringLiteral("PART carries a non-finite value");
        QTest::newRow("a weight no batch holds") << QStringLiteral("weight:1e9") << QStringLiteral("PART claims a weight of");
    }
    void aSenderOfInvalidPartsIsBanned()
    {
        QFETCH(QString, attack);
        QFETCH(QString, verdict);
        const auto d = std::filesystem::path(m_tmp.path().toStdString()) / ("parts-" + std::to_string(attack.size()));
        std::filesystem::create_directories(d);
        SwarmHarness h(m_app, writeSignedTinyRun(d, 64, 1000), d / "peers");
        auto [monitor, p1, p2, p3, liar] = startSwarm(h, 8, attack);
        const std::initializer_list<SwarmPeerProcess *> all{&p1, &p2, &p3, &liar, &monitor};
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return finished({&p1, &p2, &p3}); }, 240), all);
        // Its first step may come late: the reducers that banned it drop its round's messages,
        // so that round waits out its timeouts.
        SWARM_VERIFY(SwarmHarness::waitFor([&] { return !peerIdOf(liar).empty(); }, 120), all);
        const auto liarId = peerIdOf(liar);
        for (const auto *p : {&p1, &p2, &p3}) {
            const auto log = p->logText();
            SWARM_VERIFY(log.contains(verdict), all);
            SWARM_VERIFY(log.contains(QString::fromStdString(liarId.substr(0, 16)) + QStringLiteral(" is banned")), all);
            for (const auto *other : {&p1, &p2, &p3})
                QVERIFY2(!log.contains(QString::fromStdString(peerIdOf(*other).substr(0, 16)) + QStringLiteral(" is banned")),
                         qPrintable(p->name + QStringLiteral(" banned ") + other->name));
        }
        SWARM_VERIFY(sameParametersAtEveryStep(p1, p2, p3, 8), all);
        for (const auto *p : {&p1, &p2, &p3})
            for (const auto &[step, e] : byStep(*p))
                SWARM_VERIFY(!e.contains("loss") || std::isfinite(e.value("loss", NAN)), all);
    }
};

QTEST_MAIN(TestHostilePeer)
#include "tst_hostilepeer.moc"
