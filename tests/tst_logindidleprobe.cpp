// LogindIdleProbe (ui/LogindIdleProbe.h): readings turn into idle seconds only once logind has
// shown that the desktop sets IdleHint; no system bus means "unknown", never a hang.
#include "LogindIdleProbe.h"

#include <QElapsedTimer>
#include <QtTest>

using namespace dedloc::ui;

class TestLogindIdleProbe final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void untrustedUntilIdleSeenOnce()
    {
        LogindIdleProbe p(nullptr, 5000, false);
        QCOMPARE(p.idleSeconds(1000.0), -1.0); // no reading yet
        p.accept(false, 0);
        QCOMPARE(p.idleSeconds(1000.0), -1.0); // "active" but the desktop never set IdleHint yet
        QVERIFY(!p.trusted());
        p.accept(true, 900'000'000); // idle since t = 900 s
        QVERIFY(p.trusted());
        QCOMPARE(p.idleSeconds(1000.0), 100.0);
        QCOMPARE(p.idleSeconds(850.0), 0.0); // clock behind the hint: clamped
        p.accept(false, 900'000'000);        // the user is back
        QCOMPARE(p.idleSeconds(1000.0), 0.0);
    }

    void queryingWithoutABusDoesNotBlock()
    {
        // This machine may or may not have a system bus; either way construction returns at once
        // (the call is asynchronous) and the value stays unknown until a reply says otherwise.
        QElapsedTimer t;
        t.start();
        LogindIdleProbe p(nullptr, 100, true);
        QVERIFY(t.elapsed() < 2000);
        QTest::qWait(300);
        QVERIFY(p.idleSeconds(1e9) < 0.0 || p.trusted());
    }
};

QTEST_GUILESS_MAIN(TestLogindIdleProbe)
#include "tst_logindidleprobe.moc"
