// LAMB (core/train/Lamb.h) against values computed by hand from You et al. 2020, Algorithm 2.
#include "train/Lamb.h"
#include "util/Error.h"

#include <QtTest>

using namespace dedloc;

namespace {

OptimizerSpec spec(double wd = 0.01, double clamp = 10.0, bool debias = true)
{
    OptimizerSpec o;
    o.learningRate = 0.1;
    o.beta1 = 0.9;
    o.beta2 = 0.999;
    o.epsilon = 1e-6;
    o.weightDecay = wd;
    o.clampValue = clamp;
    o.debias = debias;
    return o;
}

torch::Tensor param(std::initializer_list<float> values, std::initializer_list<float> grad)
{
    auto p = torch::tensor(std::vector<float>(values)).set_requires_grad(true);
    p.mutable_grad() = torch::tensor(std::vector<float>(grad));
    return p;
}

} // namespace

class TestLamb final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void firstStepMatchesHandComputation()
    {
        // w = [1, 2], g = [0.5, -1], t = 1, debias:
        //   m^ = g = [0.5, -1], v^ = g^2 = [0.25, 1]
        //   r = m^/(sqrt(v^)+1e-6) + 0.01 w = [1.009998000004, -0.979999000001]
        //   ||w|| = sqrt(5) = 2.2360680, ||r|| = 1.4073002523, trust = 1.5889061157
        //   w' = w - 0.1 * trust * r = [0.8395208001, 2.1557126405]
        auto w = param({1.0F, 2.0F}, {0.5F, -1.0F});
        Lamb lamb({w}, {true}, spec());
        lamb.step(0.1);
        QCOMPARE(lamb.stepCount(), 1L);
        QVERIFY(std::abs(w[0].item<double>() - 0.8395208001) < 1e-6);
        QVERIFY(std::abs(w[1].item<double>() - 2.1557126405) < 1e-6);
    }

    void excludedTensorGetsNoWeightDecay()
    {
        // Without decay r = [0.999998, -0.999999], ||r|| = 1.41421144, trust = 2.23606798/1.41421144
        //   = 1.58114120; w' = w - 0.1 * trust * r = [0.84188620, 2.15811396]
        auto w = param({1.0F, 2.0F}, {0.5F, -1.0F});
        Lamb lamb({w}, {false}, spec());
        lamb.step(0.1);
        QVERIFY(std::abs(w[0].item<double>() - 0.84188620) < 1e-6);
        QVERIFY(std::abs(w[1].item<double>() - 2.15811396) < 1e-6);
    }

    void trustRatioIsClampedAtPhi()
    {
        // w = [30, 40] (||w|| = 50 > clamp 10), g = [1, 1], no decay: r = [0.999999, 0.999999],
        // ||r|| = sqrt(2) * 0.999999, trust = 10 / ||r|| (phi clamps 50 to 10); w' = w - 0.1 * trust * r
        auto w = param({30.0F, 40.0F}, {1.0F, 1.0F});
        Lamb lamb({w}, {false}, spec(0.0, 10.0));
        lamb.step(0.1);
        const double delta = 0.1 * (10.0 / std::sqrt(2.0 * 0.999999 * 0.999999)) * 0.999999;
        QVERIFY(std::abs(w[0].item<double>() - (30.0 - delta)) < 1e-4);
        QVERIFY(std::abs(w[1].item<double>() - (40.0 - delta)) < 1e-4);
    }

    void zeroWeightsUseTrustOne()
    {
        // ||w|| = 0: the trust ratio falls back to 1, so the first step is lr * sign-like r.
        auto w = param({0.0F, 0.0F}, {2.0F, -4.0F});
        Lamb lamb({w}, {true}, spec());
        lamb.step(0.1);
        QVERIFY(std::abs(w[0].item<double>() - (-0.1 * 2.0 / (2.0 + 1e-6))) < 1e-6);
        QVERIFY(std::abs(w[1].item<double>() - (0.1 * 4.0 / (4.0 + 1e-6))) < 1e-6);
    }

    void secondStepUsesBiasCorrectedMoments()
    {
        // Same gradient twice, no decay, w = [3, 4]: after debiasing m^ = g and v^ = g^2 at every
        // step, so r = g/(|g|+eps) each time and the steps are lr * trust * r with the then-||w||.
        auto w = param({3.0F, 4.0F}, {1.0F, 1.0F});
        Lamb lamb({w}, {false}, spec(0.0));
        lamb.step(0.1);
        w.mutable_grad() = torch::tensor(std::vector<float>{1.0F, 1.0F});
        lamb.step(0.1);
        const double r = 1.0 / (1.0 + 1e-6);
        const double rNorm = std::sqrt(2.0) * r;
        double w0 = 3.0, w1 = 4.0;
        for (int i = 0; i < 2; ++i) {
            const double trust = std::sqrt(w0 * w0 + w1 * w1) / rNorm;
            w0 -= 0.1 * trust * r;
            w1 -= 0.1 * trust * r;
        }
        QCOMPARE(lamb.stepCount(), 2L);
        QVERIFY(std::abs(w[0].item<double>() - w0) < 1e-5);
        QVERIFY(std::abs(w[1].item<double>() - w1) < 1e-5);
    }

    void stateRoundTripContinuesIdentically()
    {
        auto a = param({1.0F, -2.0F, 0.5F}, {0.3F, 0.1F, -0.2F});
        auto b = param({1.0F, -2.0F, 0.5F}, {0.3F, 0.1F, -0.2F});
        Lamb la({a}, {true}, spec());
        la.step(0.05);
        Lamb lb({b}, {true}, spec());
        {
            torch::NoGradGuard g;
            b.copy_(a);
        }
        lb.loadState(la.state(), la.stepCount());
        la.step(0.05);
        lb.step(0.05);
        QVERIFY(torch::equal(a, b));
    }

    void mismatchedStateIsRefused()
    {
        auto a = param({1.0F, 2.0F}, {1.0F, 1.0F});
        Lamb lamb({a}, {true}, spec());
        std::vector<NamedTensor> wrongShape{{"exp_avg.0", torch::zeros({3})}, {"exp_avg_sq.0", torch::zeros({3})}};
        QVERIFY_THROWS_EXCEPTION(Error, lamb.loadState(wrongShape, 1));
        QVERIFY_THROWS_EXCEPTION(Error, lamb.loadState({}, 1));
        QVERIFY_THROWS_EXCEPTION(Error, Lamb({a}, {}, spec()));
    }
};

QTEST_APPLESS_MAIN(TestLamb)
#include "tst_lamb.moc"
