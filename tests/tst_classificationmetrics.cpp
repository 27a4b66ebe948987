// Accuracy and macro-F1 (core/eval/ClassificationMetrics.h), against values worked out by hand.
#include "eval/ClassificationMetrics.h"

#include "TestSupport.h"

#include <QtTest>

#include <cmath>

using namespace dedloc;

namespace {

bool close(double actual, double expected)
{
    return std::abs(actual - expected) < 1e-12;
}

} // namespace

class TestClassificationMetrics final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void smallConfusionByHand()
    {
        // 4 labels; label 3 is neither true nor predicted anywhere.
        //   label 0: support 4, predicted 3 (rows 0, 1, 6), tp 2: F1 = 2*2 / (3 + 4) = 4/7
        //   label 1: support 3, predicted 5 (rows 2, 4, 5, 8, 9), tp 2: F1 = 4 / (5 + 3) = 1/2
        //   label 2: support 3, predicted 2 (rows 3, 7), tp 1: F1 = 2 / (2 + 3) = 2/5
        // accuracy = 5/10; macro-F1 = (4/7 + 1/2 + 2/5) / 3 = 0.490476...
        // Wrong formulas give other numbers: label 3 counted as 0 -> 0.3679, support-weighted
        // -> 0.4986, micro-F1 = accuracy -> 0.5, F1 of the macro precision and macro recall -> 0.5109.
        const std::vector<int> truth{0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
        const std::vector<int> predicted{0, 0, 1, 2, 1, 1, 0, 2, 1, 1};
        const auto s = scoreClassification(truth, predicted, 4);
        QCOMPARE(s.examples, 10L);
        QVERIFY(close(s.accuracy, 0.5));
        QVERIFY2(close(s.macroF1, (4.0 / 7.0 + 0.5 + 0.4) / 3.0), qPrintable(QString::number(s.macroF1, 'g', 17)));
        QCOMPARE(s.perLabel.size(), std::size_t{4});
        QCOMPARE(s.perLabel[1].support, 3L);
        QCOMPARE(s.perLabel[1].predicted, 5L);
        QCOMPARE(s.perLabel[1].truePositives, 2L);
        QVERIFY(close(s.perLabel[0].precision, 2.0 / 3.0));
        QVERIFY(close(s.perLabel[0].recall, 0.5));
        QVERIFY(close(s.perLabel[2].f1, 0.4));
        QVERIFY(!s.perLabel[3].counted);
        QCOMPARE(s.perLabel[3].f1, 0.0);
    }

    void predictedButNeverTrueCountsAsZero()
    {
        // label 2 is predicted once, never true: F1 0, and it is in the mean.
        // macro-F1 = (2/3 + 1 + 0) / 3 = 5/9; accuracy 3/4.
        const auto s = scoreClassification(std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 2, 1, 1}, 3);
        QVERIFY(close(s.accuracy, 0.75));
        QVERIFY(close(s.macroF1, 5.0 / 9.0));
        QVERIFY(s.perLabel[2].counted);
        QCOMPARE(s.perLabel[2].precision, 0.0);
        QCOMPARE(s.perLabel[2].recall, 0.0);
    }

    void perfectAndEmpty()
    {
        const auto perfect = scoreClassification(std::vector<int>{2, 0, 1}, std::vector<int>{2, 0, 1}, 3);
        QCOMPARE(perfect.accuracy, 1.0);
        QCOMPARE(perfect.macroF1, 1.0);
        const auto none = scoreClassification(std::vector<int>{}, std::vector<int>{}, 3);
        QCOMPARE(none.examples, 0L);
        QCOMPARE(none.accuracy, 0.0);
        QCOMPARE(none.macroF1, 0.0);
    }

    void badInputIsAnError()
    {
        QCOMPARE(test::errorOf([] {
                     (void)scoreClassification(std::vector<int>{0, 1}, std::vector<int>{0}, 2);
                 }),
                 QString("cannot score 1 predictions against 2 true labels"));
        QCOMPARE(test::errorOf([] {
                     (void)scoreClassification(std::vector<int>{0, 1}, std::vector<int>{0, 2}, 2);
                 }),
                 QString("predicted label id 2 at example 1 is outside [0, 2)"));
    }
};

QTEST_APPLESS_MAIN(TestClassificationMetrics)
#include "tst_classificationmetrics.moc"
