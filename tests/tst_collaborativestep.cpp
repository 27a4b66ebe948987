// The collaborative step (core/peer/CollaborativeStep.h) with real trainers on the tiny preset and
// real all-reduce endpoints on loopback: the averaged step applies exactly the samples-weighted
// mean of the members' gradients, a member with a non-finite gradient contributes nothing and
// does not fail, a peer without a group takes the epoch's merge or else steps on its own gradient,
// delayed parameter updates apply exactly the same step while the next one is computed, and a
// group search gives up when told.
#include "TestSupport.h"

#include "averaging/ButterflyAllReduce.h"
#include "compress/Compression.h"
#include "model/Tokenizer.h"
#include "net/DhtNode.h"
#include "net/PeerIdentity.h"
#include "peer/CollaborativeStep.h"
#include "train/Trainer.h"
#include "util/Error.h"

#include <QTemporaryDir>
#include <QtTest>

#ifndef Q_MOC_RUN // moc needs no libtorch declaration (parsing it cost ~9 s a test's moc)
#include <torch/torch.h>
#endif

#include <chrono>
#include <cmath>
#include <future>

using namespace dedloc;

namespace {

// Two reachable members on loopback, plaintext; the leader's listing (weight 1 = sender).
struct Pair {
    AllReduceEndpoint a{true}, b{true};
    FormedGroup groupOf(std::size_t me) const
    {
        FormedGroup g;
        g.info.groupId = "step-test";
        g.info.epoch = 0;
        g.info.members = {{"a", a.endpoint(), -1.0, 1.0, {}}, {"b", b.endpoint(), -1.0, 1.0, {}}};
        g.myIndex = me;
        return g;
    }
};

AllReduceOptions options(Compression codec)
{
    AllReduceOptions o;
    o.codec = codec;
    o.partElements = 4096;
    o.senderTimeout = 10.0;
    o.reducerTimeout = 15.0;
    return o;
}

// (na a + nb b) / (na + nb), elementwise: the samples-weighted mean of two peers' gradients.
std::vector<float> weightedMean(const std::vector<float> &a, double na, const std::vector<float> &b, double nb)
{
    std::vector<float> mean(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        mean[i] = static_cast<float>((na * a[i] + nb * b[i]) / (na + nb));
    return mean;
}

double maxAbsDifference(const std::vector<float> &x, const std::vector<float> &y)
{
    double d = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i)
        d = std::max(d, std::abs(static_cast<double>(x[i]) - static_cast<double>(y[i])));
    return d;
}

} // namespace

class TestCollaborativeStep final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    RunManifest m_run;
    std::unique_ptr<Tokenizer> m_tokenizer;

    std::unique_ptr<Trainer> trainer(std::uint64_t seed) const
    {
        return std::make_unique<Trainer>(m_run, *m_tokenizer, TrainerConfig{seed, false, 0, {}});
    }

private Q_SLOTS:
    void initTestCase()
    {
        torch::set_num_threads(1);
        m_run = test::tinyRun(m_dir.path().toStdString(), 200000);
        m_tokenizer = std::make_unique<Tokenizer>(m_run.resolve(m_run.tokenizer.path));
    }

    // 16 samples on one member, 32 on the other: both apply (16 g_a + 32 g_b) / 48 for a batch
    // of 48, and end with the parameters of a replay of exactly that step.
    void averagedStepAppliesTheWeightedMean()
    {
        auto a = trainer(1), b = trainer(2), replay = trainer(3);
        QCOMPARE(a->parametersFlat(), replay->parametersFlat()); // every peer starts alike
        (void)a->accumulateMicroBatch(16);
        (void)b->accumulateMicroBatch(16);
        (void)b->accumulateMicroBatch(16);
        const auto ga = a->meanGradientFlat(), gb = b->meanGradientFlat();
        const auto mean = weightedMean(ga, 16.0, gb, 32.0);

        Pair pair;
        const auto o = options(Compression::None);
        auto fa = std::async(std::launch::async, [&] { return applyCollaborativeStep(*a, pair.a, pair.groupOf(0), "", o); });
        auto fb = std::async(std::launch::async, [&] { return applyCollaborativeStep(*b, pair.b, pair.groupOf(1), "", o); });
        const auto ra = fa.get(), rb = fb.get();
        QVERIFY(ra && rb);
        for (const auto *r : {&*ra, &*rb}) {
            QVERIFY(r->averaged);
            QVERIFY(r->complete);
            QCOMPARE(r->batchSamples, 48L);
            QCOMPARE(r->groupSize, std::size_t(2));
            QCOMPARE(r->status, std::string("averaged with 1 peer(s)"));
            QVERIFY(r->result.applied);
            QCOMPARE(r->result.step, 1L);
        }
        QCOMPARE(ra->localSamples, 16L);
        QCOMPARE(rb->localSamples, 32L);
        QCOMPARE(ra->shardElements + rb->shardElements, a->parameterCount());
        QCOMPARE(a->parametersFlat(), b->parametersFlat()); // bitwise: one model

        (void)replay->applyAveragedStep(mean, 48);
        const double d = maxAbsDifference(a->parametersFlat(), replay->parametersFlat());
        QVERIFY2(d < 1e-6, qPrintable(QString::number(d)));
    }

    // Delayed parameter updates: both members detach their gradients, the round runs on other
    // threads while member a computes its next micro-batch on the parameters it has, and the step
    // then applied is exactly the replay's (the weighted mean); the next accumulation survives the
    // step intact, and it is the gradient of the parameters before the step (one step stale).
    void delayedStepAppliesTheAverageAndKeepsTheNextAccumulation()
    {
        auto a = trainer(1), b = trainer(2), replay = trainer(3), stale = trainer(1);
        (void)a->accumulateMicroBatch(16);
        (void)b->accumulateMicroBatch(16);
        (void)b->accumulateMicroBatch(16);
        (void)stale->accumulateMicroBatch(16);
        const auto ga = a->meanGradientFlat(), gb = b->meanGradientFlat();
        const auto mean = weightedMean(ga, 16.0, gb, 32.0);

        auto da = a->detachGradient(), db = b->detachGradient();
        QCOMPARE(da.meanGradient, ga);
        QCOMPARE(da.samples, 16L);
        QCOMPARE(da.epoch, 0L);
        QCOMPARE(a->accumulatedSamples(), 0L);
        QCOMPARE(a->step(), 0L); // detached, not applied

        Pair pair;
        const auto o = options(Compression::None);
        auto fa = std::async(std::launch::async, [&] { return averageDetachedGradient(pair.a, pair.groupOf(0), "", da, o); });
        auto fb = std::async(std::launch::async, [&] { return averageDetachedGradient(pair.b, pair.groupOf(1), "", db, o); });
        (void)a->accumulateMicroBatch(8); // meanwhile: the next step's samples, on the parameters before the step
        const auto next = a->meanGradientFlat();
        auto ra = fa.get(), rb = fb.get();
        QVERIFY(ra && rb);
        QVERIFY(ra->averaged && ra->complete);
        QCOMPARE(ra->batchSamples, 48L);
        QVERIFY(!ra->result.applied); // not yet: the trainer's thread applies it
        finishDetachedStep(*a, da, *ra);
        finishDetachedStep(*b, db, *rb);
        QVERIFY(ra->result.applied);
        QCOMPARE(ra->result.step, 1L);
        QCOMPARE(ra->result.samples, 48L);
        QCOMPARE(ra->result.loss, da.loss); // this peer's own loss of the step
        QCOMPARE(a->parametersFlat(), b->parametersFlat()); // bitwise: one model

        (void)replay->applyAveragedStep(mean, 48);
        const double d = maxAbsDifference(a->parametersFlat(), replay->parametersFlat());
        QVERIFY2(d < 1e-6, qPrintable(QString::number(d)));

        QCOMPARE(a->accumulatedSamples(), 8L);
        QCOMPARE(a->meanGradientFlat(), next);
        (void)stale->detachGradient();
        (void)stale->accumulateMicroBatch(8); // the same samples on the parameters before the step
        QCOMPARE(stale->meanGradientFlat(), next);

        // A detached gradient applies once, at its own epoch.
        QVERIFY_THROWS_EXCEPTION(Error, finishDetachedStep(*a, da, *ra));
    }

    // Delayed, without a group: the peer's own mean gradient, as applyCollaborativeStep alone.
    void delayedStepWithoutAGroupAppliesTheLocalGradient()
    {
        auto a = trainer(1), replay = trainer(1);
        Pair pair;
        (void)a->accumulateMicroBatch(16);
        (void)replay->accumulateMicroBatch(16);
        auto da = a->detachGradient();
        auto r = averageDetachedGradient(pair.a, std::nullopt, "nobody", da, options(Compression::Fp16));
        QVERIFY(r);
        QVERIFY(!r->averaged);
        QCOMPARE(r->batchSamples, 16L);
        QCOMPARE(r->status, std::string("fell back to local gradients: nobody"));
        finishDetachedStep(*a, da, *r);
        (void)replay->applyStep();
        QCOMPARE(a->parametersFlat(), replay->parametersFlat());
    }

    // Without a group but with the epoch's merge to take (GroupMergeHook::adopt): the peer
    // applies that merge for its weight, not its own gradient, in both the direct and the delayed
    // step; with nothing to take it falls back to its own gradient.
    void aStepWithoutAGroupTakesTheEpochsMerge()
    {
        auto a = trainer(1), b = trainer(1), replay = trainer(1), merged = trainer(2);
        Pair pair;
        (void)merged->accumulateMicroBatch(16);
        const auto swarm = merged->meanGradientFlat(); // another peer's gradient: the swarm's merge
        GroupMergeHook hook;
        long askedEpoch = -1;
        bool askedWithRound = false;
        hook.adopt = [&](long epoch, std::size_t elements, const GroupInfo *round) {
            askedEpoch = epoch;
            askedWithRound = round != nullptr;
            MergeResult m;
            m.average = elements == swarm.size() ? swarm : std::vector<float>{};
            m.weight = 96;
            m.groups = 3;
            m.peers = 9;
            m.ownMerged = false;
            return m;
        };
        (void)a->accumulateMicroBatch(16);
        (void)b->accumulateMicroBatch(16);
        auto r = applyCollaborativeStep(*a, pair.a, std::nullopt, "no group", options(Compression::Fp16), true, {}, hook);
        QVERIFY(r && r->averaged);
        QCOMPARE(askedEpoch, 0L);
        QVERIFY(!askedWithRound); // no round of its own
        QCOMPARE(r->batchSamples, 96L);
        QCOMPARE(r->mergedGroups, std::size_t{3});
        QVERIFY2(r->status.find("took the merge of 3 group(s), 9 peers") != std::string::npos, r->status.c_str());
        (void)replay->applyAveragedStep(swarm, 96);
        QCOMPARE(a->parametersFlat(), replay->parametersFlat());
        auto db = b->detachGradient();
        auto rd = averageDetachedGradient(pair.b, std::nullopt, "no group", db, options(Compression::Fp16), {}, hook);
        QVERIFY(rd && rd->averaged);
        finishDetachedStep(*b, db, *rd);
        QCOMPARE(b->parametersFlat(), replay->parametersFlat());
        hook.adopt = [](long, std::size_t, const GroupInfo *) { return MergeResult{}; }; // nothing to take
        auto c = trainer(1), alone = trainer(1);
        (void)c->accumulateMicroBatch(16);
        (void)alone->accumulateMicroBatch(16);
        r = applyCollaborativeStep(*c, pair.a, std::nullopt, "no group", options(Compression::Fp16), true, {}, hook);
        QVERIFY(r && !r->averaged);
        (void)alone->applyStep();
        QCOMPARE(c->parametersFlat(), alone->parametersFlat());
    }

    // A round that lost a part (the other member never took part: its shard's average never
    // came) leaves this peer a gradient partly its own; the epoch's merge, asked for with the
    // round's group, replaces it. Without one to take, the partial average stays.
    void anIncompleteRoundTakesTheEpochsMerge()
    {
        auto a = trainer(1), replay = trainer(1), merged = trainer(2);
        Pair pair;
        (void)merged->accumulateMicroBatch(16);
        const auto swarm = merged->meanGradientFlat();
        GroupMergeHook hook;
        std::string askedGroup;
        hook.adopt = [&](long, std::size_t elements, const GroupInfo *round) {
            askedGroup = round ? round->groupId : "(none)";
            MergeResult m;
            m.average = elements == swarm.size() ? swarm : std::vector<float>{};
            m.weight = 64;
            m.groups = 2;
            m.peers = 5;
            m.ownMerged = false;
            return m;
        };
        auto o = options(Compression::Fp16);
        o.senderTimeout = 0.5;
        o.reducerTimeout = 1.0;
        (void)a->accumulateMicroBatch(16);
        auto r = applyCollaborativeStep(*a, pair.a, pair.groupOf(0), {}, o, true, {}, hook);
        QVERIFY(r && r->averaged);
        QVERIFY(!r->complete);
        QCOMPARE(QString::fromStdString(askedGroup), QStringLiteral("step-test"));
        QCOMPARE(r->batchSamples, 64L);
        QCOMPARE(r->mergedGroups, std::size_t{2});
        QVERIFY2(r->status.find("instead of this incomplete round") != std::string::npos, r->status.c_str());
        QVERIFY(r->tookMerge); // the swarm's parameters: no repair wanted
        (void)replay->applyAveragedStep(swarm, 64);
        QCOMPARE(a->parametersFlat(), replay->parametersFlat());

        hook.adopt = [](long, std::size_t, const GroupInfo *) { return MergeResult{}; }; // nothing to take
        auto c = trainer(1);
        (void)c->accumulateMicroBatch(16);
        auto second = pair.groupOf(0);
        second.info.groupId = "step-test-2";
        r = applyCollaborativeStep(*c, pair.a, second, {}, o, true, {}, hook);
        QVERIFY(r && r->averaged && !r->complete);
        QVERIFY2(r->status.find("instead of") == std::string::npos, r->status.c_str());
        QVERIFY(!r->tookMerge);
        QVERIFY(c->parametersFlat() != replay->parametersFlat());
    }

    // A member whose gradient is not finite sends weight 0 (no values): the other's average is its
    // own gradient (through the fp16 codec), nobody throws, and the batch is the finite member's.
    void nonFiniteGradientContributesNothing()
    {
        auto a = trainer(1), b = trainer(2), replay = trainer(3);
        auto poisoned = b->stateFlat();
        // Finite parameters so large that the forward pass overflows: the gradient is not finite.
        std::fill(poisoned.begin(), poisoned.begin() + static_cast<std::ptrdiff_t>(b->parameterCount()), 1e30F);
        b->loadStateFlat(poisoned, 0);
        (void)a->accumulateMicroBatch(16);
        (void)b->accumulateMicroBatch(16);
        const auto ga = a->meanGradientFlat();
        QVERIFY(!std::isfinite(b->meanGradientFlat()[0]));

        Pair pair;
        const auto o = options(Compression::Fp16); // its encoder refuses non-finite values
        auto fa = std::async(std::launch::async, [&] { return applyCollaborativeStep(*a, pair.a, pair.groupOf(0), "", o); });
        auto fb = std::async(std::launch::async, [&] { return applyCollaborativeStep(*b, pair.b, pair.groupOf(1), "", o); });
        std::optional<StepOutcome> ra, rb;
        try {
            ra = fa.get();
            rb = fb.get();
        } catch (const std::exception &e) {
            QFAIL(e.what());
        }
        QVERIFY(ra && rb);
        QCOMPARE(rb->localSamples, 0L);
        QCOMPARE(ra->batchSamples, 16L);
        QVERIFY(ra->complete);

        std::vector<float> expected(ga.size());
        decode(Compression::Fp16, encode(Compression::Fp16, ga), expected);
        (void)replay->applyAveragedStep(expected, 16);
        const double d = maxAbsDifference(a->parametersFlat(), replay->parametersFlat());
        QVERIFY2(d < 1e-6, qPrintable(QString::number(d)));
    }

    // Without a group: the local gradient, with the reason in the status; with no sample either,
    // no step at all.
    void withoutAGroupTheLocalGradientIsApplied()
    {
        auto a = trainer(1), replay = trainer(1);
        Pair pair;
        QVERIFY(!applyCollaborativeStep(*a, pair.a, std::nullopt, "nobody", options(Compression::Fp16)));
        QCOMPARE(a->step(), 0L);
        (void)a->accumulateMicroBatch(16);
        (void)replay->accumulateMicroBatch(16);
        const auto r = applyCollaborativeStep(*a, pair.a, std::nullopt, "nobody", options(Compression::Fp16));
        QVERIFY(r);
        QVERIFY(!r->averaged);
        QCOMPARE(r->batchSamples, 16L);
        QCOMPARE(r->status, std::string("fell back to local gradients: nobody"));
        (void)replay->applyStep();
        QCOMPARE(a->parametersFlat(), replay->parametersFlat());
    }

    // A search with nobody else in the swarm ends as soon as the caller gives up, long before
    // the matchmaking window; the reason says it was stopped.
    void groupSearchGivesUpWhenTold()
    {
        const auto identity = PeerIdentity::generate();
        DhtNode dht(identity);
        MatchmakingOptions mo;
        mo.window = 20.0;
        mo.requestTimeout = 2.0;
        Matchmaker matchmaker(dht, nullptr, MatchSelf{identity.peerId(), "r", "", -1.0, true, true, identity.publicKey()},
                              mo);
        GroupSearch search(matchmaker, "schema");
        QVERIFY(!search.active());
        search.start(3, [] { return std::size_t(2); });
        QVERIFY(search.active());
        QCOMPARE(search.epoch(), 3L);
        const auto started = std::chrono::steady_clock::now();
        bool gaveUp = false;
        const auto group = search.wait(
            [&] { return std::chrono::steady_clock::now() - started > std::chrono::milliseconds(300); }, &gaveUp);
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QVERIFY(!group);
        QVERIFY(gaveUp);
        QCOMPARE(search.why(), std::string("stopped"));
        QVERIFY2(waited < mo.window / 2, qPrintable(QString::number(waited))); // hang guard
        QVERIFY(!search.active());
        QCOMPARE(search.epoch(), -1L);
    }
};

QTEST_APPLESS_MAIN(TestCollaborativeStep)
#include "tst_collaborativestep.moc"
