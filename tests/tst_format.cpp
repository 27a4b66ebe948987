// Number formatting of the panels (ui/Format.h).
#include "Format.h"

#include <QLocale>
#include <QtTest>

using namespace dedloc;
using namespace dedloc::ui;

class TestFormat final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void bytes()
    {
        QCOMPARE(formatBytes(17), QString("17 B"));
        QCOMPARE(formatBytes(512 * 1024), QString("512.0 KiB"));
        QCOMPARE(formatBytes(3ULL << 30), QString("3.0 GiB"));
        QCOMPARE(formatBytes(1536ULL << 20), QString("1.5 GiB"));
    }

    void peerCounts()
    {
        dedloc::PeerSnapshot s;
        s.trainers = 1;
        s.monitors = 1;
        QCOMPARE(formatPeerCounts(s), QString("1 trainer, 0 auxiliary, 1 monitor (0 in client mode)"));
        s.trainers = 3;
        s.auxiliaries = 1;
        s.monitors = 2;
        s.clientModePeers = 1;
        QCOMPARE(formatPeerCounts(s), QString("3 trainers, 1 auxiliary, 2 monitors (1 in client mode)"));
        s.trainers = 0;
        s.monitors = 0;
        QCOMPARE(formatPeerCounts(s), QString("0 trainers, 1 auxiliary, 0 monitors (1 in client mode)"));
        s.otherVersionPeers = 2;
        QCOMPARE(formatPeerCounts(s),
                 QString("0 trainers, 1 auxiliary, 0 monitors (1 in client mode); 2 peers on another manifest version"));
    }

    void durations()
    {
        QCOMPARE(formatDuration(-1.0), QString("unknown"));
        QCOMPARE(formatDuration(std::numeric_limits<double>::infinity()), QString("unknown"));
        QCOMPARE(formatDuration(44.6), QString("45 s"));
        QCOMPARE(formatDuration(720.0), QString("12 min"));
        QCOMPARE(formatDuration(3 * 3600 + 5 * 60), QString("3 h 05 min"));
        QCOMPARE(formatDuration(2 * 86400 + 4 * 3600), QString("2 d 4 h"));
    }

    void counts()
    {
        const QString thin(QChar(0x2009));
        QCOMPARE(formatCount(0), QString("0"));
        QCOMPARE(formatCount(999), QString("999"));
        QCOMPARE(formatCount(1234567), "1" + thin + "234" + thin + "567");
        QCOMPARE(formatCount(-1000), "-1" + thin + "000");
    }

    void stateTexts()
    {
        PeerSnapshot s;
        s.state = PeerState::Paused;
        s.stateDetail = "on battery power";
        QCOMPARE(stateTitle(s.state), QString("Paused"));
        QCOMPARE(stateExplanation(s), QString("Paused: on battery power."));
        s.state = PeerState::Error;
        s.stateDetail = "the corpus is missing; reinstall the run";
        QCOMPARE(stateExplanation(s), QString("the corpus is missing; reinstall the run"));
        s.stateDetail.clear();
        QVERIFY(stateExplanation(s).contains("Resume tries again"));
        // A trainer waiting for --min-peers says so.
        s.state = PeerState::Connecting;
        QCOMPARE(stateExplanation(s), QString("Looking for the swarm..."));
        s.stateDetail = "waiting for 3 peers, 1 here";
        QCOMPARE(stateExplanation(s), QString("Looking for the swarm: waiting for 3 peers, 1 here."));
        s.stateDetail.clear();
        // Training says whether others can connect to this machine, and why it is believed.
        s.state = PeerState::Training;
        s.deviceName = "cpu (2 threads)";
        QCOMPARE(stateExplanation(s), QString("Computing gradients on cpu (2 threads)."));
        s.reachability = "client mode: other peers cannot connect to this machine (no answer)";
        QCOMPARE(stateExplanation(s), QString("Computing gradients on cpu (2 threads). Client mode: other peers cannot "
                                              "connect to this machine (no answer)."));
    }

    // In a locale with other digits (Bengali's ০-৯, as Language.h sets for Bengali) every number
    // is written with them; separators stay.
    void localeDigits()
    {
        const QLocale before;
        QLocale::setDefault(QLocale(QLocale::Bengali, QLocale::Bangladesh));
        QCOMPARE(formatCount(1234), QString("\u09e7\u2009\u09e8\u09e9\u09ea"));
        QCOMPARE(formatNumber(12.5, 1), QString("\u09e7\u09e8.\u09eb"));
        QCOMPARE(formatBytes(3ULL << 30), QString("\u09e9.\u09e6 GiB"));
        QCOMPARE(formatDuration(3900), QString("\u09e7 h \u09e6\u09eb min")); // no translation installed here
        QCOMPARE(localDigits(QStringLiteral("18:07, step 90")), QString("\u09e7\u09ee:\u09e6\u09ed, step \u09ef\u09e6"));
        QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates));
        QCOMPARE(formatCount(1234), QString("1\u2009234"));
        QCOMPARE(localDigits(QStringLiteral("18:07")), QString("18:07"));
        QLocale::setDefault(before);
    }

    void iconsAreCompiledIn()
    {
        for (auto state : {PeerState::Idle, PeerState::Connecting, PeerState::Syncing, PeerState::Training,
                           PeerState::Averaging, PeerState::Paused, PeerState::Error, PeerState::Stopped})
            QVERIFY2(!stateIcon(state).pixmap(32, 32).isNull(), peerStateName(state));
        QVERIFY(!appIcon().pixmap(64, 64).isNull());
    }
};

QTEST_MAIN(TestFormat)
#include "tst_format.moc"
