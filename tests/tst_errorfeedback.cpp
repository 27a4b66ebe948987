// Error feedback (core/compress/ErrorFeedback.h): the residual conserves every contribution bit
// for bit, nothing is lost over rounds, and bad input changes nothing.
#include "AllReduceSwarm.h" // randomVector
#include "compress/ErrorFeedback.h"
#include "util/Error.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace dedloc;

namespace {

// n values of N(0, sigma^2).
std::vector<float> gaussian(std::size_t n, unsigned seed, float sigma = 1.0F)
{
    auto v = test::randomVector(n, seed);
    for (auto &x : v)
        x *= sigma;
    return v;
}

} // namespace

class TestErrorFeedback final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // c + e' == x + e bit for bit in every round, c is what TopK4Bit sends of x + e, and the
    // sums telescope: what was sent over all rounds plus the last residual is what was given.
    void residualConservesEveryContribution()
    {
        const std::size_t n = 3 * BlockwiseBlockElements + 500;
        ErrorFeedback feedback;
        QVERIFY(feedback.residual().empty());
        std::vector<double> given(n, 0.0), sent(n, 0.0);
        for (unsigned round = 0; round < 20; ++round) {
            const auto x = gaussian(n, 10 + round);
            std::vector<float> u = x;
            if (!feedback.residual().empty())
                for (std::size_t i = 0; i < n; ++i)
                    u[i] += feedback.residual()[i];
            auto c = x;
            feedback.compress(Compression::TopK4Bit, c);
            std::vector<float> expected(n);
            decode(Compression::TopK4Bit, encode(Compression::TopK4Bit, u), expected);
            QVERIFY(c == expected);
            for (std::size_t i = 0; i < n; ++i) {
                QCOMPARE(c[i] + feedback.residual()[i], u[i]);
                given[i] += x[i];
                sent[i] += c[i];
            }
        }
        double worst = 0.0;
        for (std::size_t i = 0; i < n; ++i)
            worst = std::max(worst, std::abs(sent[i] + feedback.residual()[i] - given[i]));
        QVERIFY2(worst < 1e-4, qPrintable(QString::number(worst)));
    }

    // A small steady contribution that top-k never keeps in one round still gets through: the
    // residual grows until it is among the largest, so no element starves.
    void smallValuesAreDelayedNotLost()
    {
        const std::size_t n = BlockwiseBlockElements;
        ErrorFeedback feedback;
        std::vector<double> sent(n, 0.0);
        const int rounds = 200;
        for (int round = 0; round < rounds; ++round) {
            auto x = gaussian(n, 100 + static_cast<unsigned>(round), 1e-3F);
            for (std::size_t i = 0; i < n; ++i)
                x[i] += 1e-2F; // the steady part every element shares
            feedback.compress(Compression::TopK4Bit, x);
            for (std::size_t i = 0; i < n; ++i)
                sent[i] += x[i];
        }
        // Each element was given 2.0 in all; each got most of it through 64-of-4096 rounds.
        for (std::size_t i = 0; i < n; ++i)
            QVERIFY2(sent[i] > 1.0 && sent[i] < 3.0, qPrintable(QString::number(sent[i])));
    }

    // A residual taken back (as after a restart from a checkpoint) continues exactly where the
    // first peer would have: the next round sends the same bits and keeps the same residual.
    void restoredResidualContinuesTheSameRounds()
    {
        const std::size_t n = 2 * BlockwiseBlockElements + 77;
        ErrorFeedback original;
        for (unsigned round = 0; round < 3; ++round) {
            auto x = gaussian(n, 40 + round);
            original.compress(Compression::TopK4Bit, x);
        }
        ErrorFeedback restarted;
        restarted.restore(std::vector<float>(original.residual().begin(), original.residual().end()));
        auto a = gaussian(n, 50);
        auto b = a;
        original.compress(Compression::TopK4Bit, a);
        restarted.compress(Compression::TopK4Bit, b);
        QVERIFY(a == b);
        QVERIFY(std::equal(original.residual().begin(), original.residual().end(), restarted.residual().begin(),
                           restarted.residual().end()));
        // A fresh peer (no residual) sends something else: the restored residual mattered.
        ErrorFeedback fresh;
        auto c = gaussian(n, 51);
        auto d = c;
        fresh.compress(Compression::TopK4Bit, c);
        original.compress(Compression::TopK4Bit, d);
        QVERIFY(c != d);
        // A residual with a non-finite value is refused and changes nothing; an empty one resets.
        const std::vector<float> kept(original.residual().begin(), original.residual().end());
        auto bad = kept;
        bad[5] = std::numeric_limits<float>::quiet_NaN();
        QVERIFY_THROWS_EXCEPTION(Error, original.restore(bad));
        QVERIFY(std::vector<float>(original.residual().begin(), original.residual().end()) == kept);
        original.restore({});
        QVERIFY(original.residual().empty());
    }

    void badInputChangesNothing()
    {
        ErrorFeedback feedback;
        auto x = gaussian(5000, 1);
        QVERIFY(!ErrorFeedback::supports(Compression::Fp16));
        QVERIFY_THROWS_EXCEPTION(Error, feedback.compress(Compression::Fp16, x));
        feedback.compress(Compression::TopK4Bit, x);
        const std::vector<float> residual(feedback.residual().begin(), feedback.residual().end());
        auto other = gaussian(4000, 2);
        QVERIFY_THROWS_EXCEPTION(Error, feedback.compress(Compression::TopK4Bit, other));
        auto nonFinite = gaussian(5000, 3);
        nonFinite[17] = std::numeric_limits<float>::infinity();
        const auto before = nonFinite;
        QVERIFY_THROWS_EXCEPTION(Error, feedback.compress(Compression::TopK4Bit, nonFinite));
        QVERIFY(nonFinite == before);
        QVERIFY(std::vector<float>(feedback.residual().begin(), feedback.residual().end()) == residual);
        feedback.reset();
        QVERIFY(feedback.residual().empty());
    }
};

QTEST_APPLESS_MAIN(TestErrorFeedback)
#include "tst_errorfeedback.moc"
