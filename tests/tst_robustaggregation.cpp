// RobustAggregation (core/averaging/RobustAggregation.h): the weighted mean, and CenteredClip's
// bound on what one sender can do, on small vectors whose answers are worked out here.
#include "averaging/RobustAggregation.h"

#include <QtTest>

#include <cmath>
#include <random>

using namespace dedloc;

namespace {

const AggregationSpec Mean{AggregationRule::Mean, 2.0};
const AggregationSpec Clip{AggregationRule::CenteredClip, 2.0};

std::vector<const float *> pointers(const std::vector<std::vector<float>> &xs)
{
    std::vector<const float *> p;
    for (const auto &x : xs)
        p.push_back(x.data());
    return p;
}

// n honest senders: a common vector plus unit noise of their own.
std::vector<std::vector<float>> honestSenders(std::size_t n, std::size_t elements)
{
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0.0F, 1.0F);
    std::vector<float> common(elements);
    for (auto &x : common)
        x = 5.0F * d(rng);
    std::vector<std::vector<float>> xs(n, common);
    for (auto &x : xs)
        for (auto &v : x)
            v += d(rng);
    return xs;
}

std::vector<double> mean(const std::vector<std::vector<float>> &xs)
{
    std::vector<double> m(xs[0].size(), 0.0);
    for (const auto &x : xs)
        for (std::size_t k = 0; k < m.size(); ++k)
            m[k] += x[k] / static_cast<double>(xs.size());
    return m;
}

double rmsDistance(const std::vector<float> &a, const std::vector<double> &b)
{
    double s = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k)
        s += (a[k] - b[k]) * (a[k] - b[k]);
    return std::sqrt(s / static_cast<double>(a.size()));
}

} // namespace

class TestRobustAggregation final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // (1 x 1 + 3 x 5) / 4 = 4, and weights all 0: the plain mean 3.
    void meanIsWeighted()
    {
        const std::vector<std::vector<float>> xs{{1.0F, 2.0F}, {5.0F, 6.0F}};
        std::vector<float> out(2);
        QCOMPARE(aggregateParts(Mean, pointers(xs), {1.0, 3.0}, out), 4.0);
        QCOMPARE(out, (std::vector<float>{4.0F, 5.0F}));
        QCOMPARE(aggregateParts(Mean, pointers(xs), {0.0, 0.0}, out), 0.0);
        QCOMPARE(out, (std::vector<float>{3.0F, 4.0F}));
    }

    // Honest senders only: CenteredClip lands within 5% of the honest spread of the weighted mean,
    // and nobody is an outlier.
    void centeredClipOfHonestSendersIsNearTheMean()
    {
        const auto xs = honestSenders(6, 4000);
        std::vector<float> out(4000);
        std::vector<SenderFit> fits;
        QCOMPARE(aggregateParts(Clip, pointers(xs), std::vector<double>(6, 2.0), out, &fits), 12.0);
        QVERIFY2(rmsDistance(out, mean(xs)) < 0.05, std::to_string(rmsDistance(out, mean(xs))).c_str());
        for (const auto &f : fits)
            QVERIFY(!f.outlier);
    }

    // One of five senders sends its values x 1000. The mean moves by about 200 x the values'
    // size; CenteredClip by at most w tau / W = 0.2 x 2 x the median distance (about 1 per
    // element here, the honest noise), and names that sender, alone, an outlier with a clip far
    // below 1.
    void centeredClipBoundsOneScaledSender()
    {
        auto xs = honestSenders(5, 4000);
        const auto honest = mean({xs.begin(), xs.begin() + 4});
        for (auto &v : xs[4])
            v *= 1000.0F;
        std::vector<float> out(4000);
        aggregateParts(Mean, pointers(xs), std::vector<double>(5, 1.0), out);
        QVERIFY(rmsDistance(out, honest) > 100.0);
        std::vector<SenderFit> fits;
        aggregateParts(Clip, pointers(xs), std::vector<double>(5, 1.0), out, &fits);
        QVERIFY2(rmsDistance(out, honest) < 0.5, std::to_string(rmsDistance(out, honest)).c_str());
        for (std::size_t i = 0; i < 4; ++i)
            QVERIFY(!fits[i].outlier);
        QVERIFY(fits[4].outlier);
        QVERIFY(fits[4].clip < 0.01);
    }

    // Rows of an embedding that each of three senders saw alone: their parts have disjoint
    // supports, and the one holding 48 of the 80 samples sent values 100x the others'. Pulling
    // with its samples it would outpull the two others while far, drag the centre towards it at
    // every step and leave them beyond FarRadii radii (ResultCheck.h) after the 200 steps. Its
    // pull is 0.9 x the others' 32 samples: the centre settles (the fixed point holds) within
    // 1.5 radii of the two.
    void aHeavySenderCannotOutpullTheOthers()
    {
        std::mt19937 rng(5);
        std::normal_distribution<float> d(0.0F, 1.0F);
        std::vector<std::vector<float>> xs(3, std::vector<float>(3000, 0.0F));
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t k = 1000 * i; k < 1000 * i + 100; ++k)
                xs[i][k] = (i == 2 ? 100.0F : 1.0F) * d(rng);
        const std::vector<double> ws{16.0, 16.0, 48.0};
        QCOMPARE(pullWeight(48.0, 80.0), 0.9 * 32.0);
        QCOMPARE(pullWeight(16.0, 80.0), 16.0);
        std::vector<float> out(3000);
        double tau = 0.0;
        QCOMPARE(aggregateParts(Clip, pointers(xs), ws, out, nullptr, &tau), 80.0);
        QVERIFY(tau > 0.0);
        std::vector<double> residual(3000, 0.0);
        for (std::size_t i = 0; i < 3; ++i) {
            double n2 = 0.0;
            for (std::size_t k = 0; k < 3000; ++k)
                n2 += (xs[i][k] - out[k]) * (xs[i][k] - out[k]);
            const double n = std::sqrt(n2), c = std::min(1.0, tau / n);
            if (i < 2)
                QVERIFY2(n < 1.5 * tau, (std::to_string(n / tau) + " radii").c_str());
            for (std::size_t k = 0; k < 3000; ++k)
                residual[k] += pullWeight(ws[i], 80.0) * c * (xs[i][k] - out[k]);
        }
        double r2 = 0.0;
        for (double r : residual)
            r2 += r * r;
        QVERIFY2(std::sqrt(r2) < 1e-3 * tau * 80.0, std::to_string(std::sqrt(r2) / tau).c_str());
    }

    // Weight-0 senders send no values (zeros): they neither pull the centre nor count. With one
    // weighted sender left the result is its values exactly, bit for bit (a state round's copy).
    void weightlessSendersAreLeftOut()
    {
        std::vector<std::vector<float>> xs{{0.0F, 0.0F}, {0.1F, -7.3F}, {0.0F, 0.0F}, {0.0F, 0.0F}};
        std::vector<float> out(2);
        QCOMPARE(aggregateParts(Clip, pointers(xs), {0.0, 1.0, 0.0, 0.0}, out), 1.0);
        QCOMPARE(out, xs[1]);
    }

    // Three senders, two of them identical: the median distance is 0, so the radius is 0 and
    // the result is the majority's values; the third is clipped to nothing but, with no spread
    // among the others to compare with, not called an outlier (a state round's diverged peer).
    void zeroRadiusKeepsTheMajority()
    {
        std::vector<std::vector<float>> xs{{1.0F, 2.0F}, {1.0F, 2.0F}, {9.0F, -9.0F}};
        std::vector<float> out(2);
        std::vector<SenderFit> fits;
        aggregateParts(Clip, pointers(xs), {1.0, 1.0, 1.0}, out, &fits);
        QCOMPARE(out, xs[0]);
        QCOMPARE(fits[2].clip, 0.0);
        QVERIFY(!fits[2].outlier);
    }

    // A sender with few samples deviates more (about 1/sqrt(w)): 1 sample against 256 with 40x
    // the noise (2.5x once normalised) is not an outlier, while the same deviation at equal weight is.
    void fewSamplesAllowAWiderSpread()
    {
        auto xs = honestSenders(4, 2000);
        for (std::size_t k = 0; k < xs[3].size(); ++k)
            xs[3][k] = xs[0][k] + 40.0F * (xs[3][k] - xs[0][k]);
        std::vector<float> out(2000);
        std::vector<SenderFit> fits;
        aggregateParts(Clip, pointers(xs), {256.0, 256.0, 256.0, 1.0}, out, &fits);
        QVERIFY(!fits[3].outlier);
        aggregateParts(Clip, pointers(xs), {256.0, 256.0, 256.0, 256.0}, out, &fits);
        QVERIFY(fits[3].outlier);
    }
};

QTEST_APPLESS_MAIN(TestRobustAggregation)
#include "tst_robustaggregation.moc"
