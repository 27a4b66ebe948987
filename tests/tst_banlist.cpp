// Temporary bans of misbehaving senders (core/averaging/BanList.h): strikes within a window, the
// threshold, ban expiry on an injected clock, several strikes at once, and concurrent strikers.
#include "averaging/BanList.h"
#include "util/Log.h"

#include <QTest>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace dedloc;

class TestBanList final : public QObject {
    Q_OBJECT

    std::mutex m_logMutex;
    std::vector<std::string> m_log; // warnings of category "ban" since init()

private Q_SLOTS:
    void init()
    {
        m_log.clear();
        log::setSink([this](log::Level level, std::string_view category, std::string_view message) {
            std::lock_guard lock(m_logMutex);
            if (level == log::Level::Warning && category == "ban")
                m_log.emplace_back(message);
        });
    }
    void cleanup() { log::setSink(nullptr); }

    // The defaults: three strikes within 60 s ban for 300 s.
    void defaultsBanThreeStrikesForFiveMinutes()
    {
        BanList bans;
        QVERIFY(!bans.strike("x", "bad", 0.0));
        QVERIFY(!bans.strike("x", "bad", 10.0));
        QCOMPARE(bans.strikes("x", 10.0), 2);
        QVERIFY(!bans.isBanned("x", 10.0));
        QVERIFY(bans.strike("x", "bad", 20.0));
        QVERIFY(bans.isBanned("x", 20.0));
        QVERIFY(bans.isBanned("x", 319.5));
        QVERIFY(!bans.isBanned("x", 320.5));
        // Strikes 40 s apart never gather three within 60 s.
        for (double t = 0.0; t <= 400.0; t += 40.0)
            QVERIFY(!bans.strike("slow", "bad", t));
        QVERIFY(!bans.isBanned("slow", 400.0));
    }

    void thresholdIsConfigurable()
    {
        BanList five({5, 60.0, 300.0});
        for (int i = 0; i < 4; ++i)
            QVERIFY(!five.strike("x", "bad", i));
        QCOMPARE(five.strikes("x", 4.0), 4);
        QVERIFY(!five.isBanned("x", 4.0));
        QVERIFY(five.strike("x", "bad", 4.0));
        QVERIFY(five.isBanned("x", 4.0));

        BanList one({1, 60.0, 300.0});
        QVERIFY(one.strike("y", "bad", 0.0));
        QVERIFY(one.isBanned("y", 1.0));
    }

    // Strikes older than the window no longer count, and new ones start a fresh count.
    void windowForgetsOldStrikes()
    {
        BanList bans({3, 10.0, 100.0});
        QVERIFY(!bans.strike("x", "bad", 0.0));
        QVERIFY(!bans.strike("x", "bad", 5.0));
        QCOMPARE(bans.strikes("x", 5.0), 2);
        QCOMPARE(bans.strikes("x", 16.0), 0);
        QVERIFY(!bans.strike("x", "bad", 16.0));
        QCOMPARE(bans.strikes("x", 16.0), 1);
        QVERIFY(!bans.isBanned("x", 16.0));
        QCOMPARE(bans.strikes("never struck", 16.0), 0);
    }

    // A ban lasts banSeconds from the banning strike; afterwards the sender is served again and
    // can be banned anew (here without escalation).
    void banExpiresAndCanRecur()
    {
        BanList bans({2, 60.0, 100.0, 0});
        QVERIFY(!bans.strike("x", "bad", 1000.0));
        QVERIFY(bans.strike("x", "bad", 1001.0));
        QVERIFY(bans.isBanned("x", 1100.9));
        QVERIFY(!bans.isBanned("x", 1101.1));
        QVERIFY(!bans.strike("x", "bad", 1200.0));
        QVERIFY(!bans.isBanned("x", 1200.0));
        QVERIFY(bans.strike("x", "bad", 1201.0));
        QVERIFY(bans.isBanned("x", 1300.9));
        QVERIFY(!bans.isBanned("x", 1301.1));
    }

    // By default the second ban of a sender lasts for the run, and says so; a third sender
    // banned once is not affected.
    void secondBanIsForTheRun()
    {
        BanList bans({1, 60.0, 100.0});
        QVERIFY(bans.strike("x", "bad", 0.0));
        QVERIFY(bans.strike("once", "bad", 0.0));
        QVERIFY(!bans.isBanned("x", 100.1));
        QVERIFY(bans.strike("x", "bad", 200.0));
        QVERIFY(bans.isBanned("x", 1e9));
        QVERIFY(!bans.isBanned("once", 1e9));
        QVERIFY(!bans.strike("x", "bad", 1e9)); // already banned: no new ban
        QCOMPARE(bans.bansImposed(), std::uint64_t(3));
        QVERIFY(std::any_of(m_log.begin(), m_log.end(),
                            [](const std::string &l) { return l == "x is banned for the rest of the run (ban 2)"; }));
        // It survives a restart as "run", and is restored as such.
        const auto saved = bans.toJson(1e9);
        QVERIFY2(saved == (nlohmann::json{{"x", "run"}}), saved.dump().c_str());
        BanList after({1, 60.0, 100.0});
        QCOMPARE(after.restore(saved, 2e9), 1);
        QVERIFY(after.isBanned("x", 3e9));
    }

    // A ban at once (ban()) is a ban like three strikes': it lasts banSeconds, logs its reason,
    // counts, and escalates: after it, the next ban (at once or by strikes) is for the run. A
    // ban() while banned changes nothing.
    void aBanAtOnceLastsAndEscalatesLikeStrikes()
    {
        BanList bans; // 3 strikes, 60 s, 300 s, the second ban for the run
        QVERIFY(bans.ban("x", "far off in 4 of 4 rounds", 0.0));
        QVERIFY(bans.isBanned("x", 299.0));
        QVERIFY(!bans.isBanned("x", 300.5));
        QVERIFY(!bans.ban("x", "again", 100.0));
        QCOMPARE(bans.bansImposed(), std::uint64_t(1));
        QVERIFY(std::any_of(m_log.begin(), m_log.end(),
                            [](const std::string &l) { return l == "x: far off in 4 of 4 rounds"; }));
        QVERIFY(!bans.strike("x", "bad", 400.0));
        QVERIFY(!bans.strike("x", "bad", 401.0));
        QVERIFY(bans.strike("x", "bad", 402.0));
        QVERIFY(bans.isBanned("x", 1e9));
        QVERIFY(bans.ban("y", "far off", 0.0));
        QVERIFY(!bans.isBanned("y", 301.0));
        QVERIFY(bans.ban("y", "far off", 500.0));
        QVERIFY(bans.isBanned("y", 1e9));
        QCOMPARE(bans.bansImposed(), std::uint64_t(4));
    }

    // Further strikes while banned do not end the ban early.
    void strikesDuringABanKeepItInForce()
    {
        BanList bans({2, 60.0, 100.0});
        QVERIFY(!bans.strike("x", "bad", 0.0));
        QVERIFY(bans.strike("x", "bad", 0.0));
        for (double t = 10.0; t < 100.0; t += 10.0) {
            (void)bans.strike("x", "bad", t);
            QVERIFY(bans.isBanned("x", t));
        }
        QVERIFY(bans.isBanned("x", 99.9));
    }

    // Time is the caller's: the list never reads the wall clock.
    void timeIsInjected()
    {
        BanList bans({1, 60.0, 300.0});
        QVERIFY(bans.strike("past", "bad", 0.0));
        QVERIFY(bans.isBanned("past", 299.0)); // long before the real time
        QVERIFY(bans.strike("future", "bad", 1e12));
        QVERIFY(bans.isBanned("future", 1e12 + 299.0)); // long after it
        QVERIFY(!bans.isBanned("future", 1e12 + 301.0));
    }

    // One call may record the strikes of several rejected messages.
    void severalStrikesAtOnce()
    {
        BanList bans({3, 60.0, 300.0});
        QVERIFY(bans.strike("all", "bad round", 0.0, 3));
        QVERIFY(bans.isBanned("all", 0.0));
        QVERIFY(bans.strike("many", "bad round", 0.0, 10));
        QVERIFY(bans.isBanned("many", 0.0));
        QVERIFY(!bans.strike("two", "bad round", 0.0, 2));
        QCOMPARE(bans.strikes("two", 0.0), 2);
        QVERIFY(!bans.isBanned("two", 0.0));
        QVERIFY(bans.strike("two", "bad round", 1.0));
        QVERIFY(bans.isBanned("two", 1.0));
    }

    void sendersAreIndependent()
    {
        BanList bans({2, 60.0, 300.0});
        QVERIFY(!bans.strike("a", "bad", 0.0));
        QVERIFY(!bans.strike("b", "bad", 0.0));
        QVERIFY(!bans.isBanned("a", 0.0));
        QVERIFY(bans.strike("a", "bad", 1.0));
        QVERIFY(bans.isBanned("a", 1.0));
        QVERIFY(!bans.isBanned("b", 1.0));
        QCOMPARE(bans.strikes("b", 1.0), 1);
    }

    // Several strikes in one call are logged once, with their reason.
    void strikesAreLoggedOnceWithTheirReason()
    {
        BanList bans({10, 60.0, 300.0});
        QVERIFY(!bans.strike("peer-7", "oversized header", 0.0, 4));
        int mentions = 0;
        for (const auto &line : m_log)
            if (line.find("oversized header") != std::string::npos) {
                ++mentions;
                QVERIFY2(line.find("peer-7") != std::string::npos, line.c_str());
            }
        QCOMPARE(mentions, 1);
    }

    // Concurrent strikers: every strike counts, and exactly one of them bans.
    // The active bans go to JSON and back (a restart); ended bans, ends further away than a ban
    // lasts, and malformed entries are not restored.
    void activeBansSurviveARestart()
    {
        BanList before({1, 60.0, 300.0});
        before.strike("evil", "test", 1000.0);
        before.strike("old", "test", 500.0); // ended at 800
        QCOMPARE(before.bansImposed(), std::uint64_t(2));
        auto saved = before.toJson(1000.0);
        QVERIFY2(saved == (nlohmann::json{{"evil", 1300.0}}), saved.dump().c_str());
        saved["forever"] = 1e12;
        saved["text"] = "soon";
        saved["nan"] = nullptr;
        saved["ended"] = 900.0;
        BanList after({1, 60.0, 300.0});
        QCOMPARE(after.restore(saved, 1100.0), 1);
        QVERIFY(after.isBanned("evil", 1100.0));
        QVERIFY(!after.isBanned("evil", 1300.0));
        for (const char *who : {"forever", "text", "nan", "ended", "old"})
            QVERIFY2(!after.isBanned(who, 1100.0), who);
        QCOMPARE(after.bansImposed(), std::uint64_t(1));
        QCOMPARE(after.restore(nlohmann::json::array(), 1100.0), 0);
    }

    void concurrentStrikesBanExactlyOnce()
    {
        constexpr int Threads = 4, PerThread = 50;
        BanList bans({Threads * PerThread, 1e9, 1e9});
        std::atomic<int> banning{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < Threads; ++t)
            threads.emplace_back([&] {
                for (int i = 0; i < PerThread; ++i)
                    if (bans.strike("x", "bad", 1.0))
                        ++banning;
            });
        for (auto &t : threads)
            t.join();
        QCOMPARE(banning.load(), 1);
        QVERIFY(bans.isBanned("x", 2.0));
    }

    // The list stays bounded under many senders (a connection id each) without forgetting bans
    // in force or recent strikes.
    void manySendersKeepBansInForce()
    {
        BanList bans({3, 60.0, 300.0});
        QVERIFY(bans.strike("victim", "bad", 0.0, 3));
        for (int i = 0; i < 10001; ++i)
            (void)bans.strike("connection " + std::to_string(i), "bad", 0.0);
        QVERIFY(!bans.strike("recent", "bad", 50.0, 2));
        QVERIFY(!bans.strike("newcomer", "bad", 100.0));
        QVERIFY(bans.isBanned("victim", 100.0));
        QVERIFY(bans.isBanned("victim", 299.0));
        QCOMPARE(bans.strikes("recent", 100.0), 2);
        QCOMPARE(bans.strikes("newcomer", 100.0), 1);
    }
};

QTEST_APPLESS_MAIN(TestBanList)
#include "tst_banlist.moc"
