// The monitor's credit of each peer (core/monitor/CreditLedger.h): steps merge into ranges, an
// older or repeated step is not counted twice, the newest 64 ranges are kept, records round-trip
// and hostile ones are refused, and a peer's own count over the monitor's steps finds the steps
// the monitor missed.
#include "monitor/CreditLedger.h"

#include <QtTest>

using namespace dedloc;

class TestCreditLedger final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void stepsMergeIntoRanges()
    {
        CreditLedger ledger;
        for (long step : {3L, 4L, 5L, 8L, 9L, 12L})
            ledger.add("aa", step, 10 * step);
        ledger.add("aa", 9, 1000); // repeated: not counted again
        ledger.add("aa", 7, 1000); // older: not counted
        ledger.add("aa", 13, -5);  // negative samples: ignored
        ledger.add("bb", 1, 32);
        const auto *a = ledger.find("aa");
        QVERIFY(a);
        QCOMPARE(a->samples, 10LL * (3 + 4 + 5 + 8 + 9 + 12));
        QCOMPARE(a->steps, 6L);
        QCOMPARE(a->ranges, (std::vector<std::pair<long, long>>{{3, 5}, {8, 9}, {12, 12}}));
        QCOMPARE(a->throughStep(), 12L);
        QVERIFY(a->recorded(4) && a->recorded(9) && !a->recorded(6) && !a->recorded(13));
        QVERIFY(!ledger.find("cc"));
        auto changed = ledger.takeChanged(1);
        QCOMPARE(changed, std::vector<std::string>{"aa"});
        QCOMPARE(ledger.takeChanged(8), std::vector<std::string>{"bb"}); // the rest stays pending
        QVERIFY(ledger.takeChanged(8).empty());
    }

    void theNewestRangesAreKept()
    {
        CreditLedger ledger;
        for (long i = 0; i < 100; ++i)
            ledger.add("aa", 2 * i, 1); // every other step: 100 ranges
        const auto *a = ledger.find("aa");
        QCOMPARE(a->ranges.size(), MaxCreditRanges);
        QCOMPARE(a->ranges.front().first, 2L * (100 - long(MaxCreditRanges)));
        QCOMPARE(a->steps, 100L); // the counts keep the older steps
        const auto text = creditToJson("aa", *a).dump();
        QVERIFY(text.size() < MaxCreditRecordBytes);
        const auto back = creditFromJson(text, "aa", "mon", 5.0);
        QVERIFY(back.has_value()); // trimmed ranges need not cover every counted step
        QCOMPARE(back->ranges, a->ranges);
    }

    void recordsRoundTripAndHostileOnesAreRefused()
    {
        MonitorCredit c;
        c.samples = 96;
        c.steps = 3;
        c.ranges = {{2, 3}, {7, 7}};
        const auto text = creditToJson("aa", c).dump();
        const auto back = creditFromJson(text, "aa", "mon", 1.8e9);
        QVERIFY(back.has_value());
        QCOMPARE(back->monitorId, std::string("mon"));
        QCOMPARE(back->samples, 96LL);
        QCOMPARE(back->ranges, c.ranges);
        QCOMPARE(back->at, 1.8e9);
        QVERIFY(!creditFromJson(text, "bb", "mon", 0).has_value()); // about another peer
        for (const char *bad : {
                 "not json", "[1]", R"({"peer_id":"aa","samples":-1,"steps":0,"ranges":[]})",
                 R"({"peer_id":"aa","samples":5,"steps":1,"ranges":[[3,2]]})",        // last < first
                 R"({"peer_id":"aa","samples":5,"steps":2,"ranges":[[3,3],[3,3]]})",  // overlapping
                 R"({"peer_id":"aa","samples":5,"steps":3,"ranges":[[5,6],[1,1]]})",  // decreasing
                 R"({"peer_id":"aa","samples":5,"steps":9,"ranges":[[1,2]]})",        // steps not the ranges'
                 R"({"peer_id":"aa","samples":5.5,"steps":1,"ranges":[[1,1]]})",
                 R"({"peer_id":"aa","samples":5,"steps":1,"ranges":[[1,"x"]]})",
                 R"({"peer_id":"aa","samples":5,"steps":1})"})
            QVERIFY2(!creditFromJson(bad, "aa", "mon", 0).has_value(), bad);
        std::string many = R"({"peer_id":"aa","samples":5,"steps":65,"ranges":[)";
        for (int i = 0; i < 65; ++i) {
            if (i)
                many += ',';
            many.append("[").append(std::to_string(2 * i)).append(",").append(std::to_string(2 * i)).append("]");
        }
        QVERIFY(!creditFromJson(many + "]}", "aa", "mon", 0).has_value()); // more ranges than allowed
        QVERIFY(!creditFromJson(std::string(MaxCreditRecordBytes + 1, ' '), "aa", "mon", 0).has_value());
    }

    void theOwnCountFindsWhatTheMonitorMissed()
    {
        const std::map<long, long long> own{{1, 30}, {2, 32}, {3, 0}, {4, 31}, {5, 33}, {9, 40}};
        MonitorCredit c;
        c.ranges = {{2, 2}, {4, 5}};
        c.samples = 96;
        c.steps = 3;
        const auto count = countOwnCredit(own, c);
        QCOMPARE(count.samplesInRecordedSteps, 32LL + 31 + 33); // steps 2, 4, 5
        QCOMPARE(count.stepsMissed, 0L); // step 3 had no samples of ours; 1 and 9 are outside the span
        c.ranges = {{2, 2}, {5, 9}};
        const auto gap = countOwnCredit(own, c);
        QCOMPARE(gap.stepsMissed, 1L); // step 4
        QCOMPARE(gap.samplesMissed, 31LL);
        QCOMPARE(countOwnCredit(own, MonitorCredit{}).samplesInRecordedSteps, 0LL);
    }
};

QTEST_APPLESS_MAIN(TestCreditLedger)
#include "tst_creditledger.moc"
