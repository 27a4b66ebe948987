// Judging a replay pass against the swarm's pace (core/averaging/ReplayPace.h): a pass that
// gains, or is too short to judge, says nothing; one that did not gain names its figures.
#include "averaging/ReplayPace.h"

#include <QtTest>

using namespace dedloc;

class TestReplayPace final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void aPassThatGainsOrIsShortSaysNothing()
    {
        QVERIFY(replayFallsBehind({8, 8.0, 10'400'000, 12, 4}).empty());                    // 8 behind fewer
        QVERIFY(replayFallsBehind({MinUpdatesToJudge - 1, 30.0, 3'900'000, 5, 9}).empty()); // too short
        QVERIFY(replayFallsBehind({8, 0.0, 10'400'000, 5, 9}).empty());                     // no time measured
    }

    void aPassThatDoesNotGainSaysWhy()
    {
        // 8 updates of 1.3 MB in 24 s (3.47 Mbit/s, 3 s each); 5 behind before, 7 after: the swarm
        // took 10 steps meanwhile.
        const auto line = replayFallsBehind({8, 24.0, 10'400'000, 5, 7});
        QVERIFY2(line.find("8 averaged steps took 24.0 s (3.0 s each, 3.5 Mbit/s from donors)") != std::string::npos,
                 line.c_str());
        QVERIFY2(line.find("while the swarm took 10; still 7 behind") != std::string::npos, line.c_str());
        // Not gaining at all (as far behind as before) is falling behind too.
        QVERIFY(!replayFallsBehind({4, 12.0, 5'200'000, 6, 6}).empty());
    }
};

QTEST_APPLESS_MAIN(TestReplayPace)
#include "tst_replaypace.moc"
