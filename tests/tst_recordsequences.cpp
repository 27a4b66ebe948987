// Sequence numbers of a DHT node's records (core/net/RecordSequences.h): increasing per key,
// from the time, and keys not published for the memory forgotten without going backwards.
#include "net/RecordSequences.h"

#include <QtTest>

using namespace dedloc;

class TestRecordSequences final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    // Each key on its own: above its last and at least the time in milliseconds.
    void sequencesIncreasePerKeyFromTheTime()
    {
        RecordSequences s;
        QCOMPARE(s.next("a", 1000.0), std::uint64_t{1000000});
        QCOMPARE(s.next("a", 1000.0), std::uint64_t{1000001}); // faster than the clock
        QCOMPARE(s.next("b", 1000.0), std::uint64_t{1000000}); // another key, its own count
        QCOMPARE(s.next("a", 1002.5), std::uint64_t{1002500}); // the clock caught up
        QCOMPARE(s.size(), std::size_t{2});
    }

    // A key per epoch, as the swarm publishes: what is remembered stays bounded by the keys of
    // the memory's span, not by every key ever published.
    void keysOfPastEpochsAreForgotten()
    {
        RecordSequences s(60.0);
        for (int epoch = 0; epoch < 1000; ++epoch)
            (void)s.next("groups/" + std::to_string(epoch), 1000.0 + epoch);
        // Forgotten at most every 6 s: the last 60 s of keys, plus up to 6 s more.
        QVERIFY2(s.size() >= 61 && s.size() <= 67, qPrintable(QString::number(s.size())));
    }

    // A forgotten key starts again from the time, above its last sequence: a reader that kept
    // its last record still takes the new one.
    void aForgottenKeyNeverGoesBackwards()
    {
        RecordSequences s(60.0);
        std::uint64_t last = 0;
        for (int i = 0; i < 500; ++i) // a burst well ahead of the clock (500 in one second)
            last = s.next("k", 1000.0);
        for (int i = 0; i < 100; ++i)
            (void)s.next("other" + std::to_string(i), 1061.0 + i); // "k" is forgotten meanwhile
        QVERIFY(s.size() < 100);
        QVERIFY(s.next("k", 1161.0) > last);
    }
};

QTEST_GUILESS_MAIN(TestRecordSequences)
#include "tst_recordsequences.moc"
