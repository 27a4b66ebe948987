// Token bucket (core/net/TokenBucket.h): logic on a fake clock, and the cap measured on a real
// ZeroMQ loopback stream (the bandwidth cap holds within 10% on loopback).
#include "net/TokenBucket.h"

#include "TestSupport.h"

#include <QtTest>

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace dedloc;

class TestTokenBucket final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void noCapNeverWaits()
    {
        double now = 0.0;
        TokenBucket bucket(0.0, 0.0, [&] { return now; });
        for (int i = 0; i < 100; ++i)
            QCOMPARE(bucket.reserve(1u << 30), 0.0);
    }

    void refillAndDebt()
    {
        double now = 100.0;
        TokenBucket bucket(1000.0, 500.0, [&] { return now; });
        QCOMPARE(bucket.level(), 500.0);     // starts full
        QCOMPARE(bucket.reserve(500), 0.0);  // the burst goes at once
        QCOMPARE(bucket.reserve(250), 0.25); // then 1000 B/s: 250 B wait 0.25 s
        QCOMPARE(bucket.level(), -250.0);
        now += 0.25;
        QCOMPARE(bucket.level(), 0.0);
        now += 10.0;
        QCOMPARE(bucket.level(), 500.0); // refills only up to the burst
        // A message larger than the burst: allowed, followed by a pause.
        QCOMPARE(bucket.reserve(2000), 1.5);
        // A second sender queues behind the first one's debt.
        QCOMPARE(bucket.reserve(100), 1.6);
        now += 1.6;
        QCOMPARE(bucket.reserve(0), 0.0);
    }

    void defaultBurstIsAboutATenthOfASecond()
    {
        double now = 0.0;
        QCOMPARE(TokenBucket(2e6, 0.0, [&] { return now; }).burst(), 2e5);
        QCOMPARE(TokenBucket(1e5, 0.0, [&] { return now; }).burst(), 65536.0);
    }

    void setRateKeepsLevelWithinNewBurst()
    {
        double now = 0.0;
        TokenBucket bucket(1000.0, 1000.0, [&] { return now; });
        QCOMPARE(bucket.reserve(200), 0.0); // level 800
        bucket.setRate(100.0, 300.0);
        QCOMPARE(bucket.level(), 300.0);
        QCOMPARE(bucket.reserve(400), 1.0); // -100 at 100 B/s
        bucket.setRate(0.0);
        QCOMPARE(bucket.reserve(1 << 20), 0.0); // cap removed
        QCOMPARE(bucket.rate(), 0.0);
    }

    void clockGoingBackDoesNotMint()
    {
        double now = 50.0;
        TokenBucket bucket(1000.0, 500.0, [&] { return now; });
        QCOMPARE(bucket.reserve(500), 0.0);
        now = 40.0;
        QCOMPARE(bucket.level(), 0.0);
        now = 50.5;
        QCOMPARE(bucket.level(), 500.0);
    }

    void badCapsRefused()
    {
        QVERIFY(test::errorOf([] { TokenBucket b(-1.0); }).contains("non-negative number of bytes per second"));
        QVERIFY(test::errorOf([] { TokenBucket b(1.0, std::nan("")); }).contains("burst"));
        TokenBucket ok(10.0);
        QVERIFY(
            test::errorOf([&] { ok.setRate(std::numeric_limits<double>::infinity()); }).contains("bytes per second"));
        QCOMPARE(ok.rate(), 10.0);
    }

    void threadSafe()
    {
        // Frozen clock: every reservation is debt, so the final level counts every byte taken.
        double now = 0.0;
        TokenBucket bucket(1000.0, 5000.0, [&] { return now; });
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&] {
                for (int i = 0; i < 10000; ++i)
                    (void)bucket.reserve(7);
            });
        for (auto &t : threads)
            t.join();
        QCOMPARE(bucket.level(), 5000.0 - 4 * 10000 * 7);
    }

    void loopbackRateWithinTenPercent()
    {
        constexpr double kCap = 2e6; // bytes per second
        constexpr std::size_t kChunk = 64 * 1024;
        constexpr std::size_t kTotal = 64 * kChunk; // 4 MiB
        zmq::context_t context(1);
        zmq::socket_t pull(context, zmq::socket_type::pull);
        pull.set(zmq::sockopt::linger, 0);
        pull.bind("tcp://127.0.0.1:*");
        const std::string endpoint = pull.get(zmq::sockopt::last_endpoint);

        std::thread sender([&] {
            zmq::socket_t push(context, zmq::socket_type::push);
            push.set(zmq::sockopt::linger, 0);
            push.connect(endpoint);
            TokenBucket bucket(kCap, double(kChunk));
            std::vector<char> payload(kChunk, 'x');
            for (std::size_t sent = 0; sent < kTotal; sent += kChunk) {
                bucket.acquire(kChunk);
                push.send(zmq::buffer(payload), zmq::send_flags::none);
            }
            // Keep the socket until the receiver has everything (linger 0 drops queued data).
            zmq::message_t ack;
            zmq::socket_t done(context, zmq::socket_type::pair);
            done.set(zmq::sockopt::linger, 0);
            done.connect("inproc://done");
            (void)done.recv(ack);
        });
        zmq::socket_t done(context, zmq::socket_type::pair);
        done.set(zmq::sockopt::linger, 0);
        done.bind("inproc://done");

        using Clock = std::chrono::steady_clock;
        Clock::time_point first, last;
        std::size_t received = 0;
        pull.set(zmq::sockopt::rcvtimeo, 10000);
        while (received < kTotal) {
            zmq::message_t m;
            QVERIFY2(pull.recv(m), "no data for 10 s");
            if (received == 0)
                first = Clock::now();
            received += m.size();
            last = Clock::now();
        }
        done.send(zmq::str_buffer("ok"), zmq::send_flags::none);
        sender.join();

        // The first chunk comes out of the burst; the rest is paced by the cap.
        const double seconds = std::chrono::duration<double>(last - first).count();
        const double rate = double(kTotal - kChunk) / seconds;
        qInfo("loopback: %zu bytes, cap %.0f B/s, measured %.0f B/s over %.3f s (%.1f%% of the cap)", received, kCap,
              rate, seconds, 100.0 * rate / kCap);
        QCOMPARE(received, kTotal);
        QVERIFY2(std::abs(rate - kCap) <= 0.10 * kCap, qPrintable(QString("measured %1 B/s").arg(rate)));
    }
};

QTEST_GUILESS_MAIN(TestTokenBucket)
#include "tst_tokenbucket.moc"
