// The throttle of ResourceCaps::computeShare (face/PeerControl.h): the rest after a micro-batch
// keeps the share of time spent computing at the share asked for, never below the minimum share.
#include "face/PeerControl.h"

#include <QtTest>

using namespace dedloc;

class TestPeerControl final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void restKeepsTheShare()
    {
        for (const double share : {0.1, 0.25, 0.5, 0.8}) {
            const double rest = throttleRestSeconds(2.0, share);
            QVERIFY2(std::abs(2.0 / (2.0 + rest) - share) < 1e-12, qPrintable(QString::number(share)));
        }
        QCOMPARE(throttleRestSeconds(2.0, 0.5), 2.0);
        QCOMPARE(throttleRestSeconds(2.0, 1.0), 0.0);  // no cap
        QCOMPARE(throttleRestSeconds(2.0, 0.0), 0.0);  // unset: no cap
        QCOMPARE(throttleRestSeconds(2.0, 1.5), 0.0);
        QCOMPARE(throttleRestSeconds(2.0, 0.01), throttleRestSeconds(2.0, MinComputeShare)); // at least 10%
        QCOMPARE(throttleRestSeconds(0.0, 0.5), 0.0);
        QCOMPARE(throttleRestSeconds(-1.0, 0.5), 0.0);
        QCOMPARE(throttleRestSeconds(2.0, std::nan("")), 0.0);
    }
};

QTEST_GUILESS_MAIN(TestPeerControl)
#include "tst_peercontrol.moc"
