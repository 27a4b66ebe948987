// The outer optimizer of local-update mode (core/train/OuterOptimizer.h): the pseudo-gradient,
// Nesterov momentum against values worked out by hand, the reset and rebase, size errors.
#include "train/OuterOptimizer.h"
#include "util/Error.h"

#include <QtTest>

#ifndef Q_MOC_RUN // moc needs no libtorch declaration (parsing it cost ~9 s a test's moc)
#include <torch/torch.h>
#endif

#include <vector>

using namespace dedloc;

namespace {

std::vector<float> values(const torch::Tensor &t)
{
    auto c = t.detach().contiguous();
    return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

void compareNear(const std::vector<float> &got, const std::vector<float> &want)
{
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        QVERIFY2(std::abs(got[i] - want[i]) < 1e-6F, qPrintable(QStringLiteral("element %1: %2, expected %3")
                                                                   .arg(i).arg(got[i]).arg(want[i])));
}

} // namespace

class TestOuterOptimizer final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void nesterovStepsMatchHandComputedValues()
    {
        // Two tensors, as a model's parameters: w = [1, 2] and [[3]].
        auto a = torch::tensor({1.0F, 2.0F});
        auto b = torch::tensor({{3.0F}});
        OuterOptimizer outer({a, b}, 0.5, 0.9);
        QCOMPARE(outer.elements(), 3LL);
        // Inner steps moved the local parameters: delta = theta - w = [0.4, -0.2, 1].
        a.copy_(torch::tensor({0.6F, 2.2F}));
        b.copy_(torch::tensor({{2.0F}}));
        compareNear(outer.pseudoGradient(), {0.4F, -0.2F, 1.0F});
        // Step 1 with the averaged delta d1 = [0.2, 0.0, 1.0]:
        //   v = d1 = [0.2, 0, 1];  update = d1 + 0.9 v = [0.38, 0, 1.9]
        //   theta = [1, 2, 3] - 0.5 update = [0.81, 2.0, 2.05]
        const std::vector<float> d1 = {0.2F, 0.0F, 1.0F};
        outer.step(d1);
        compareNear(values(a), {0.81F, 2.0F});
        compareNear(values(b), {2.05F});
        compareNear(outer.anchorFlat(), {0.81F, 2.0F, 2.05F});
        compareNear(outer.momentumFlat(), {0.2F, 0.0F, 1.0F});
        compareNear(outer.pseudoGradient(), {0.0F, 0.0F, 0.0F}); // w is the anchor again
        // Step 2 with d2 = [-0.1, 0.3, 0]:
        //   v = 0.9 [0.2, 0, 1] + d2 = [0.08, 0.3, 0.9];  update = d2 + 0.9 v = [-0.028, 0.57, 0.81]
        //   theta = [0.81, 2.0, 2.05] - 0.5 update = [0.824, 1.715, 1.645]
        const std::vector<float> d2 = {-0.1F, 0.3F, 0.0F};
        outer.step(d2);
        compareNear(outer.momentumFlat(), {0.08F, 0.3F, 0.9F});
        compareNear(outer.anchorFlat(), {0.824F, 1.715F, 1.645F});
        compareNear(values(a), {0.824F, 1.715F});
    }

    void withoutMomentumAndRateOneTheStepSubtractsTheAverage()
    {
        // lr 1, mu 0: theta <- theta - delta_avg; with delta_avg = the own delta the outer step
        // lands exactly where the inner steps went (the equivalence with gradients mode).
        auto w = torch::tensor({0.5F, -1.5F, 4.0F});
        OuterOptimizer outer({w}, 1.0, 0.0);
        w.copy_(torch::tensor({0.25F, -1.0F, 3.0F}));
        outer.step(outer.pseudoGradient());
        compareNear(values(w), {0.25F, -1.0F, 3.0F});
    }

    void resetAndRebase()
    {
        auto w = torch::tensor({1.0F, 1.0F});
        OuterOptimizer outer({w}, 0.7, 0.9);
        w.copy_(torch::tensor({5.0F, 6.0F}));
        outer.resetToAnchor(); // a skipped outer step drops the local progress
        compareNear(values(w), {1.0F, 1.0F});
        // A downloaded state: the parameters become the anchor, the momentum is the donor's.
        w.copy_(torch::tensor({2.0F, 3.0F}));
        const std::vector<float> momentum = {0.5F, -0.5F};
        outer.rebase(momentum);
        compareNear(outer.anchorFlat(), {2.0F, 3.0F});
        compareNear(outer.momentumFlat(), momentum);
        compareNear(outer.pseudoGradient(), {0.0F, 0.0F});
        outer.rebase({}); // a fresh start: no momentum
        compareNear(outer.momentumFlat(), {0.0F, 0.0F});
    }

    void wrongSizesAreRefused()
    {
        auto w = torch::tensor({1.0F, 2.0F});
        OuterOptimizer outer({w}, 0.7, 0.9);
        const std::vector<float> three = {1.0F, 2.0F, 3.0F};
        QVERIFY_THROWS_EXCEPTION(Error, outer.step(three));
        QVERIFY_THROWS_EXCEPTION(Error, outer.rebase(three));
        compareNear(values(w), {1.0F, 2.0F}); // unchanged
        compareNear(outer.momentumFlat(), {0.0F, 0.0F});
    }
};

QTEST_GUILESS_MAIN(TestOuterOptimizer)
#include "tst_outeroptimizer.moc"
