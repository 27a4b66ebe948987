// One download from several donors of the same state (core/averaging/DonorDownload.h, used by
// StateDownload.h's downloadState): hand-made donors that answer each part after a delay, so
// that a download from one donor at a time and one from all at once differ in who serves what.
#include "averaging/BanList.h"
#include "averaging/DonorDownload.h"
#include "averaging/StateDownload.h"
#include "util/Clock.h"
#include "util/Hash.h"

#include "FakeDonor.h"

#include <QTest>

#include <atomic>
#include <cmath>
#include <chrono>
#include <cstring>
#include <thread>

using namespace dedloc;
using namespace dedloc::test;
using Clock = std::chrono::steady_clock;

namespace {

// The state: 24 values in 6 parts of 4.
constexpr std::uint64_t Elements = 24, PartElements = 4;
constexpr std::uint32_t Parts = 6;

std::vector<float> honestValues()
{
    std::vector<float> v(Elements);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = 0.25F * static_cast<float>(i) - 2.0F;
    return v;
}

std::string digestOf(const std::vector<float> &v)
{
    return sha256Hex(v.data(), v.size() * sizeof(float));
}

std::string offer(const std::string &digest, long epoch = 5)
{
    return serviceHeader("state", stateInfoToJson({"s1", epoch, Elements, Parts, PartElements, digest}));
}

// Serves part k of `values` after `delay` (a donor behind a slow uplink).
std::function<std::vector<Frames>(std::uint64_t)> slowParts(std::vector<float> values, std::chrono::milliseconds delay)
{
    return [values = std::move(values), delay](std::uint64_t k) -> std::vector<Frames> {
        std::this_thread::sleep_for(delay);
        std::string data(PartElements * sizeof(float), '\0');
        std::memcpy(data.data(), values.data() + k * PartElements, data.size());
        return {{serviceHeader("part", {{"i", "s1"}, {"k", k}}), data}};
    };
}

StateDownloadOptions quick()
{
    StateDownloadOptions o;
    o.partTimeout = 0.5;
    return o;
}

} // namespace

class TestDonorDownload final : public QObject {
    Q_OBJECT

    zmq::context_t m_context{1};
    std::atomic<bool> m_running{false};

private Q_SLOTS:
    // Two donors of one state, each 150 ms a part: both serve parts of the one download, no part
    // twice, and it takes about half the time one donor would (6 x 150 ms = 0.9 s alone).
    void twoDonorsOfOneStateShareTheParts()
    {
        const auto values = honestValues();
        FakeDonor a(m_context, donorOf(offer(digestOf(values)), slowParts(values, std::chrono::milliseconds(150))));
        FakeDonor b(m_context, donorOf(offer(digestOf(values)), slowParts(values, std::chrono::milliseconds(150))));
        std::string why;
        const auto start = Clock::now();
        const auto s = downloadState({a.advert("a"), b.advert("b")}, "r", 5, Elements, quick(), m_running, &why);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->values, values);
        QCOMPARE(a.requests("part?") + b.requests("part?"), int(Parts));
        QVERIFY2(a.requests("part?") >= 2 && b.requests("part?") >= 2,
                 (std::to_string(a.requests("part?")) + " and " + std::to_string(b.requests("part?"))).c_str());
        // Each donor is asked what it offers once: the download goes on over that connection.
        QCOMPARE(a.requests("state?"), 1);
        QCOMPARE(b.requests("state?"), 1);
        qInfo("two donors: %.2f s (one alone would take at least 0.9 s)", seconds);
    }

    // A donor that falls silent after its first part: the other takes over its parts (the
    // silent one's part comes back to the board), the state is whole, and nobody is struck.
    void aDonorThatFallsSilentLeavesItsPartsToTheOther()
    {
        const auto values = honestValues();
        auto once = std::make_shared<std::atomic<int>>(0);
        auto firstOnly = [values, once](std::uint64_t k) -> std::vector<Frames> {
            if (once->fetch_add(1) > 0)
                return {}; // silent from its second part on
            return slowParts(values, std::chrono::milliseconds(50))(k);
        };
        FakeDonor quitter(m_context, donorOf(offer(digestOf(values)), firstOnly));
        FakeDonor steady(m_context, donorOf(offer(digestOf(values)), slowParts(values, std::chrono::milliseconds(50))));
        std::string why;
        BanList bans;
        const auto s = downloadState({quitter.advert("quitter"), steady.advert("steady")}, "r", 5, Elements, quick(),
                                     m_running, &why, nullptr, &bans);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->values, values);
        QCOMPARE(quitter.requests("part?"), 2); // one served, one in vain
        QCOMPARE(steady.requests("part?"), int(Parts) - 1);
        QCOMPARE(bans.strikes("quitter", unixNow()), 0);
        QCOMPARE(bans.strikes("steady", unixNow()), 0);
    }

    // A liar offers the honest donor's digest and serves garbage parts. Assembled from both, the
    // state misses its digest; nobody can be blamed yet, and the download starts over from one
    // donor at a time. Honest first: its state has the digest, and the liar's parts of the first
    // try differ from it: banned. Liar first: its own whole state misses the digest: banned at once
    // (no honest donor serves a state other than the one it offered); the honest one serves.
    void aLiarAmongSeveralDonorsCostsARetryNotAnHonestStrike_data()
    {
        QTest::addColumn<bool>("liarFirst");
        QTest::newRow("honest first") << false;
        QTest::newRow("liar first") << true;
    }
    void aLiarAmongSeveralDonorsCostsARetryNotAnHonestStrike()
    {
        QFETCH(bool, liarFirst);
        const auto values = honestValues();
        std::vector<float> garbage(Elements, 7e3F);
        FakeDonor honest(m_context, donorOf(offer(digestOf(values)), slowParts(values, std::chrono::milliseconds(60))));
        FakeDonor liar(m_context, donorOf(offer(digestOf(values)), slowParts(garbage, std::chrono::milliseconds(60))));
        std::vector<DonorAdvert> donors{honest.advert("honest"), liar.advert("liar")};
        if (liarFirst)
            std::swap(donors[0], donors[1]);
        std::string why;
        BanList bans;
        const auto s = downloadState(donors, "r", 5, Elements, quick(), m_running, &why, nullptr, &bans);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->values, values);
        QVERIFY(liar.requests("part?") >= 1); // it served part of the download from both
        QCOMPARE(bans.strikes("honest", unixNow()), 0);
        QVERIFY(!bans.isBanned("honest", unixNow()));
        QVERIFY(bans.isBanned("liar", unixNow()));
    }

    // Who served a part that differs from the verified state: only those donors, and nobody when
    // the verified state has another layout.
    void donorsOfOtherPartsNamesOnlyTheirDonors()
    {
        const auto values = honestValues();
        DisputedState disputed{digestOf(values), PartElements, values, {"a", "b", "a", "c", "", "b"}};
        disputed.values[2 * PartElements + 1] = 9.0F; // a's second part
        disputed.values[4 * PartElements] = -0.0F;    // nobody's (a part that never arrived)
        disputed.values[5 * PartElements + 3] = std::nextafter(values[5 * PartElements + 3], 1e9F); // b's, by one ulp
        const StateSnapshot verified{5, values};
        QCOMPARE(donorsOfOtherParts(disputed, verified), (std::set<std::string>{"a", "b"}));
        disputed.values.resize(Elements - 1);
        QVERIFY(donorsOfOtherParts(disputed, verified).empty());
    }

    // downloadFromSeveral itself: a donor that now offers another state takes no part, and one
    // whose part has the wrong size is marked invalid; the third serves the whole state.
    void donorsThatChangedOrBrokeTheProtocolTakeNoMoreParts()
    {
        const auto values = honestValues();
        FakeDonor moved(m_context, donorOf(offer(digestOf(values), 6), slowParts(values, std::chrono::milliseconds(0))));
        auto shortPart = [](std::uint64_t k) -> std::vector<Frames> {
            return {{serviceHeader("part", {{"i", "s1"}, {"k", k}}), std::string(3, '\0')}};
        };
        FakeDonor broken(m_context, donorOf(offer(digestOf(values)), shortPart));
        FakeDonor good(m_context, donorOf(offer(digestOf(values)), slowParts(values, std::chrono::milliseconds(30))));
        const StateInfo target{"", 5, Elements, Parts, PartElements, digestOf(values)};
        PartialState partial;
        std::vector<DonorOutcome> outcomes;
        const auto s = downloadFromSeveral({moved.advert("moved"), broken.advert("broken"), good.advert("good")},
                                           target, "r", quick(), m_running, nullptr, partial, outcomes);
        QVERIFY(s.has_value());
        QCOMPARE(s->values, values);
        QCOMPARE(int(outcomes.size()), 3);
        QCOMPARE(moved.requests("part?"), 0);
        QVERIFY2(outcomes[0].why.find("another state") != std::string::npos, outcomes[0].why.c_str());
        QVERIFY(!outcomes[0].invalid);
        QCOMPARE(broken.requests("part?"), 1);
        QVERIFY(outcomes[1].invalid);
        QVERIFY(outcomes[2].why.empty());
    }
};

QTEST_APPLESS_MAIN(TestDonorDownload)
#include "tst_donordownload.moc"
