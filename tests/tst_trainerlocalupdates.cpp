// The trainer in local-update mode (core/train/Trainer.h, OuterOptimizer.h; DiLoCo): with one
// inner step per outer step, learning rate 1 and no momentum it is gradients mode; inner steps
// move the local parameters and the pseudo-gradient is what they moved; the outer step lands
// where the Nesterov formula says; the state and checkpoints carry the anchor and the momentum,
// and a joiner that loads them continues from the same point; checkpoints keep the error-feedback
// residual; what does not fit is refused.
#include "TestSupport.h"

#include "model/Tokenizer.h"
#include "train/Checkpoint.h"
#include "train/Trainer.h"
#include "util/Error.h"

#include <QTemporaryDir>
#include <QtTest>

#ifndef Q_MOC_RUN // moc needs no libtorch declaration (parsing it cost ~9 s a test's moc)
#include <torch/torch.h>
#endif

#include <cmath>
#include <cstring>
#include <limits>

using namespace dedloc;
using dedloc::test::relativeDifference;

namespace {

bool sameBits(const std::vector<float> &a, const std::vector<float> &b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

class TestTrainerLocalUpdates final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    RunManifest m_run; // gradients mode
    std::unique_ptr<Tokenizer> m_tokenizer;

    RunManifest localRun(int innerBatch, double lr = 0.7, double momentum = 0.9) const
    {
        auto m = m_run;
        AveragingSpec a;
        a.mode = AveragingMode::LocalUpdates;
        a.innerBatchSize = innerBatch;
        a.outerLearningRate = lr;
        a.outerMomentum = momentum;
        m.averagingField = a;
        return m;
    }

private Q_SLOTS:
    void initTestCase()
    {
        torch::set_num_threads(1);
        m_run = test::tinyRun(m_dir.path().toStdString());
        QCOMPARE(m_run.training.targetBatchSize, 32);
        m_tokenizer = std::make_unique<Tokenizer>(m_run.resolve(m_run.tokenizer.path));
    }

    void oneInnerStepWithoutMomentumIsGradientsMode()
    {
        Trainer gradients(m_run, *m_tokenizer, TrainerConfig{5, false, 0, {}});
        Trainer local(localRun(32, 1.0, 0.0), *m_tokenizer, TrainerConfig{5, false, 0, {}});
        for (long step = 1; step <= 3; ++step) {
            const auto a = gradients.trainStep();
            const auto b = local.trainStep();
            QVERIFY(b.applied);
            QCOMPARE(b.step, step);
            QCOMPARE(local.step(), step);
            // The same samples on the same parameters (up to the rounding below).
            QVERIFY2(std::abs(b.loss - a.loss) < 1e-5, qPrintable(QStringLiteral("%1 vs %2").arg(b.loss).arg(a.loss)));
            QCOMPARE(b.samples, 32L);
        }
        // theta - (theta - w) rounds differently from w: equal up to float rounding.
        const double d = relativeDifference(local.parametersFlat(), gradients.parametersFlat());
        qInfo("relative difference after 3 steps: %.3g", d);
        QVERIFY2(d < 1e-6, qPrintable(QString::number(d)));
    }

    void innerStepsMoveTheParametersAndTheOuterStepIsNesterov()
    {
        Trainer t(localRun(8), *m_tokenizer, TrainerConfig{3, false, 0, {}});
        const auto anchor = t.parametersFlat();
        // A micro-batch never spans two inner steps: 16 asked, 8 computed, one inner step.
        QCOMPARE(t.accumulateMicroBatch(16).samples, 8);
        QCOMPARE(t.step(), 0L);
        QCOMPARE(t.accumulatedSamples(), 8L);
        QVERIFY(!sameBits(t.parametersFlat(), anchor));
        const auto midState = t.stateFlat(); // its parameters are still the anchor
        QVERIFY(sameBits(std::vector<float>(midState.begin(), midState.begin() + static_cast<std::ptrdiff_t>(anchor.size())),
                         anchor));
        while (t.accumulatedSamples() < 32)
            t.accumulateMicroBatch(16);
        const auto local = t.parametersFlat();
        const auto delta = t.gradientToAverage();
        for (std::size_t i = 0; i < delta.size(); ++i)
            QCOMPARE(delta[i], anchor[i] - local[i]);
        const auto r = t.applyAveragedStep(delta, 32);
        QVERIFY(r.applied);
        QCOMPARE(r.step, 1L);
        // v = delta, theta' = theta - 0.7 (delta + 0.9 v) = theta - 1.33 delta.
        std::vector<float> expected(anchor.size());
        for (std::size_t i = 0; i < anchor.size(); ++i)
            expected[i] = anchor[i] - 1.33F * delta[i];
        const double d = relativeDifference(t.parametersFlat(), expected);
        QVERIFY2(d < 1e-6, qPrintable(QString::number(d)));
    }

    void stateAndCheckpointsCarryTheAnchorAndMomentum()
    {
        Trainer donor(localRun(8), *m_tokenizer, TrainerConfig{11, false, 0, {}});
        QCOMPARE(donor.stateElements(), 2 * donor.parameterCount());
        for (int i = 0; i < 2; ++i)
            QVERIFY(donor.trainStep().applied);
        const auto anchor = donor.parametersFlat();
        donor.accumulateMicroBatch(8); // an inner step after the boundary
        const auto state = donor.stateFlat();
        const auto p = static_cast<std::size_t>(donor.parameterCount());
        // Inner steps leave the shareable state alone: donors of an epoch agree bit for bit.
        donor.accumulateMicroBatch(8);
        QVERIFY(sameBits(donor.stateFlat(), state));
        QVERIFY(sameBits(std::vector<float>(state.begin(), state.begin() + static_cast<std::ptrdiff_t>(p)), anchor));
        const bool momentumSet = std::any_of(state.end() - static_cast<std::ptrdiff_t>(p), state.end(),
                                             [](float x) { return x != 0.0F; });
        QVERIFY(momentumSet);
        // A joiner that loads it holds the same state, on the anchor.
        Trainer joiner(localRun(8), *m_tokenizer, TrainerConfig{12, false, 0, {}});
        joiner.accumulateMicroBatch(8); // its own inner statistics, which it keeps
        joiner.loadStateFlat(state, 2);
        QCOMPARE(joiner.step(), 2L);
        QVERIFY(sameBits(joiner.stateFlat(), state));
        QVERIFY(sameBits(joiner.parametersFlat(), anchor));
        // A checkpoint taken mid-step holds the boundary: the anchor and the momentum.
        const auto ckpt = std::filesystem::path(m_dir.path().toStdString()) / "local";
        donor.saveCheckpoint(ckpt);
        Trainer resumed(localRun(8), *m_tokenizer, TrainerConfig{11, false, 0, {}});
        QCOMPARE(resumed.restoreCheckpoint(ckpt).value_or(-1), 2L);
        QVERIFY(sameBits(resumed.stateFlat(), state));
        QVERIFY(sameBits(resumed.parametersFlat(), anchor));
        // The gradients-mode layout (3 parameter counts) does not fit, nor its checkpoints.
        // (The checkpoint keeps this peer's inner statistics too: 4 tensors a parameter.)
        std::vector<float> gradientsLayout(3 * p);
        QVERIFY_THROWS_EXCEPTION(Error, joiner.loadStateFlat(gradientsLayout, 3));
        QCOMPARE(joiner.step(), 2L);
        Trainer gradients(m_run, *m_tokenizer, TrainerConfig{1, false, 0, {}});
        QVERIFY(!gradients.restoreCheckpoint(ckpt).has_value());
    }

    // The error-feedback residual travels in the checkpoint: a restarted peer gets it back bit for
    // bit, once; a residual of another size is refused when saving and when reading (the store
    // falls back to the checkpoint before it).
    void checkpointsKeepTheFeedbackResidual()
    {
        Trainer t(localRun(8), *m_tokenizer, TrainerConfig{21, false, 0, {}});
        QVERIFY(t.trainStep().applied);
        const auto p = static_cast<std::size_t>(t.parameterCount());
        std::vector<float> first(p), second(p);
        for (std::size_t i = 0; i < p; ++i) {
            first[i] = static_cast<float>(i % 97) * 1e-4F;
            second[i] = -static_cast<float>(i % 89) * 1e-3F;
        }
        const auto ckpt = std::filesystem::path(m_dir.path().toStdString()) / "residual";
        t.saveCheckpoint(ckpt, first);
        std::vector<float> wrong(p - 1);
        QVERIFY_THROWS_EXCEPTION(Error, t.saveCheckpoint(ckpt, wrong));
        {
            Trainer resumed(localRun(8), *m_tokenizer, TrainerConfig{21, false, 0, {}});
            QCOMPARE(resumed.restoreCheckpoint(ckpt).value_or(-1), 1L);
            QVERIFY(sameBits(resumed.takeRestoredFeedbackResidual(), first));
            QVERIFY(resumed.takeRestoredFeedbackResidual().empty()); // taken once
            QVERIFY(sameBits(resumed.stateFlat(), t.stateFlat()));
        }
        // The newest checkpoint's residual, rewritten one element short, is refused.
        t.saveCheckpoint(ckpt, second);
        const CheckpointStore store(ckpt);
        auto newest = readCheckpointFile(store.newestPath());
        QCOMPARE(newest.tensors.back().name, std::string("feedback.residual"));
        newest.tensors.back().tensor = newest.tensors.back().tensor.slice(0, 1).clone();
        writeCheckpointFile(store.newestPath(), newest);
        {
            Trainer resumed(localRun(8), *m_tokenizer, TrainerConfig{21, false, 0, {}});
            QCOMPARE(resumed.restoreCheckpoint(ckpt).value_or(-1), 1L);
            QVERIFY(sameBits(resumed.takeRestoredFeedbackResidual(), first)); // the previous one's
        }
        // A checkpoint without a residual gives none.
        t.saveCheckpoint(ckpt);
        Trainer plain(localRun(8), *m_tokenizer, TrainerConfig{21, false, 0, {}});
        QCOMPARE(plain.restoreCheckpoint(ckpt).value_or(-1), 1L);
        QVERIFY(plain.takeRestoredFeedbackResidual().empty());
    }

    void nonFinitePseudoGradientSkipsAndReturnsToTheAnchor()
    {
        Trainer t(localRun(16), *m_tokenizer, TrainerConfig{4, false, 0, {}});
        const auto anchor = t.parametersFlat();
        t.accumulateMicroBatch(16);
        auto delta = t.gradientToAverage();
        delta[0] = std::numeric_limits<float>::quiet_NaN();
        const auto r = t.applyAveragedStep(delta, 16);
        QVERIFY(!r.applied);
        QVERIFY2(r.skipReason.find("non-finite pseudo-gradient") != std::string::npos, r.skipReason.c_str());
        QCOMPARE(t.step(), 0L);
        QVERIFY(sameBits(t.parametersFlat(), anchor));
    }

    void overlappedOuterStepCarriesTheInnerProgressOver()
    {
        // Delayed updates in this mode: the pseudo-gradient is detached, two inner steps follow on
        // the local parameters, then the outer step arrives and the progress moves onto it.
        Trainer t(localRun(8), *m_tokenizer, TrainerConfig{6, false, 0, {}});
        const auto theta = t.parametersFlat();
        t.accumulateMicroBatch(8);
        t.accumulateMicroBatch(8);
        auto detached = t.detachGradient();
        QCOMPARE(detached.samples, 16L);
        QCOMPARE(t.step(), 0L);
        QCOMPARE(t.accumulatedSamples(), 0L);
        const auto atDetach = t.parametersFlat();
        for (std::size_t i = 0; i < theta.size(); ++i)
            QCOMPARE(detached.meanGradient[i], theta[i] - atDetach[i]);
        t.accumulateMicroBatch(8);
        t.accumulateMicroBatch(8);
        const auto beforeMerge = t.parametersFlat();
        QVERIFY(!sameBits(beforeMerge, atDetach)); // the inner steps went on
        const auto r = t.applyDetachedStep(detached, detached.meanGradient, 16);
        QVERIFY(r.applied);
        QCOMPARE(r.step, 1L);
        QCOMPARE(t.accumulatedSamples(), 16L); // the next outer step's samples stay
        // theta' = theta - 1.33 delta (v = delta); w = theta' + (beforeMerge - atDetach).
        std::vector<float> anchor(theta.size()), local(theta.size());
        for (std::size_t i = 0; i < theta.size(); ++i) {
            anchor[i] = theta[i] - 1.33F * detached.meanGradient[i];
            local[i] = anchor[i] + (beforeMerge[i] - atDetach[i]);
        }
        const double da = relativeDifference(t.sharedParametersFlat(), anchor);
        const double dw = relativeDifference(t.parametersFlat(), local);
        QVERIFY2(da < 1e-6 && dw < 1e-6, qPrintable(QStringLiteral("%1 %2").arg(da).arg(dw)));
        // A detached pseudo-gradient of another epoch is refused.
        QVERIFY_THROWS_EXCEPTION(Error, t.applyDetachedStep(detached, detached.meanGradient, 16));
    }
};

QTEST_APPLESS_MAIN(TestTrainerLocalUpdates)
#include "tst_trainerlocalupdates.moc"
