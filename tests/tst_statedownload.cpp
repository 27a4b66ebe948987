// Downloading the training state from donors (core/averaging/StateDownload.h): donor ranking,
// a bit-exact download from a real PeerService, and hand-made donors that are behind, offer
// another layout, send bad parts, stay silent or answer with fields of the wrong type.
#include "averaging/BanList.h"
#include "averaging/PeerService.h"
#include "averaging/StateDownload.h"
#include "util/Clock.h"
#include "util/Hash.h"

#include "FakeDonor.h"

#include <QTest>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

using namespace dedloc;
using namespace dedloc::test;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string header(const std::string &type, const json &fields = json::object())
{
    return serviceHeader(type, fields);
}

// The state the hand-made donors hold: 10 values in parts of 4 (4 + 4 + 2).
constexpr std::uint64_t Elements = 10, PartElements = 4;
float valueAt(std::size_t i)
{
    return static_cast<float>(i) + 0.5F;
}
std::string partValues(std::uint64_t k, std::int64_t extra = 0)
{
    const auto first = k * PartElements;
    const auto count = static_cast<std::int64_t>(std::min(PartElements, Elements - first)) + extra;
    std::string out(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)) * sizeof(float), '\0');
    for (std::size_t i = 0; i < out.size() / sizeof(float); ++i) {
        const float v = valueAt(first + i);
        std::memcpy(out.data() + i * sizeof(float), &v, sizeof(float));
    }
    return out;
}
std::string stateHeader(long epoch = 5, std::uint64_t elements = Elements, std::uint32_t parts = 3)
{
    return header("state", stateInfoToJson({"s1", epoch, elements, parts, PartElements, {}}));
}
std::string partHeader(std::uint64_t k, const std::string &id = "s1")
{
    return header("part", {{"i", id}, {"k", k}});
}

std::vector<Frames> goodPart(std::uint64_t k)
{
    return {{partHeader(k), partValues(k)}};
}

// A real donor holding `values` at `epoch`.
struct RealDonor {
    PeerService service;
    RealDonor(long epoch, std::vector<float> values, std::uint64_t partElements = PartElements)
        : service("r", "tcp://127.0.0.1:*", partElements)
    {
        service.setState(std::make_shared<StateSnapshot>(StateSnapshot{epoch, std::move(values)}));
    }
    [[nodiscard]] DonorAdvert advert(const std::string &peerId, long epoch) const
    {
        return {peerId, service.endpoint(), epoch, {}};
    }
};

std::vector<float> goodValues()
{
    std::vector<float> v(Elements);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = -valueAt(i);
    return v;
}

StateDownloadOptions quick()
{
    StateDownloadOptions o;
    o.partTimeout = 0.3;
    return o;
}

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

class TestStateDownload final : public QObject {
    Q_OBJECT

    zmq::context_t m_context{1};
    std::atomic<bool> m_running{false}; // never set: downloads that are not stopped

private Q_SLOTS:
    void rankingKeepsDonorsAtOrAfterMinEpochNewestFirst()
    {
        const std::vector<DonorAdvert> donors{{"a", "tcp://a:1", 3},  {"b", "tcp://b:1", 9}, {"c", "tcp://c:1", 7},
                                              {"d", "tcp://d:1", 12}, {"e", "tcp://e:1", 7}, {"f", "tcp://f:1", 6}};
        const auto ranked = rankDonors(donors, 7);
        QCOMPARE(ranked.size(), std::size_t(4));
        QCOMPARE(ranked[0].peerId, std::string("d"));
        QCOMPARE(ranked[1].peerId, std::string("b"));
        QVERIFY((ranked[2].peerId == "c" && ranked[3].peerId == "e") ||
                (ranked[2].peerId == "e" && ranked[3].peerId == "c"));
        QCOMPARE(ranked[2].serviceEndpoint, "tcp://" + ranked[2].peerId + ":1");
        QVERIFY(rankDonors(donors, 13).empty());
        QVERIFY(rankDonors({}, 0).empty());
        QCOMPARE(rankDonors(donors, 0).size(), donors.size());
        QCOMPARE(rankDonors(donors, 7, 9).front().peerId, std::string("b")); // d's 12: beyond the swarm
    }

    // Equal epochs come in random order, so simultaneous joiners spread over the donors.
    void rankingShufflesTies()
    {
        const std::vector<DonorAdvert> donors{
            {"x", "tcp://x:1", 9}, {"y", "tcp://y:1", 9}, {"z", "tcp://z:1", 9}, {"top", "tcp://t:1", 10}};
        std::map<std::string, int> second;
        for (int i = 0; i < 300; ++i) {
            const auto ranked = rankDonors(donors, 0);
            QCOMPARE(ranked.size(), std::size_t(4));
            QCOMPARE(ranked[0].peerId, std::string("top"));
            ++second[ranked[1].peerId];
        }
        for (const char *who : {"x", "y", "z"}) // each about 100 times
            QVERIFY2(second[who] > 50, who);
    }

    // Every bit of the donor's snapshot arrives (signed zeros, subnormals, extremes), with the
    // snapshot's epoch rather than the advert's.
    void downloadIsBitExact()
    {
        std::vector<float> state(2500);
        for (std::size_t i = 0; i < state.size(); ++i) {
            auto bits = static_cast<std::uint32_t>(i * 2654435761U);
            if ((bits & 0x7f800000U) == 0x7f800000U) // inf or NaN: make it finite
                bits ^= 0x00800000U;
            std::memcpy(&state[i], &bits, sizeof(float));
        }
        state[0] = -0.0F;
        state[1] = std::numeric_limits<float>::denorm_min();
        state[2] = std::numeric_limits<float>::max();
        state[2499] = std::numeric_limits<float>::lowest();
        RealDonor donor(14, state, 1000);
        std::string why;
        const auto s = downloadState({donor.advert("donor", 10)}, "r", 10, state.size(), {}, m_running, &why);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->epoch, 14L);
        QCOMPARE(s->values.size(), state.size());
        QVERIFY(std::memcmp(s->values.data(), state.data(), state.size() * sizeof(float)) == 0);
        QCOMPARE(donor.service.served("part?"), 3LL);
    }

    // A donor falls silent after parts 0 and 1: the other one offering the same digest (both serve
    // the download at once) fetches what it lacks, and no part is fetched twice; a donor offering
    // another digest starts over, and its state, not matching its digest, is struck.
    void downloadGoesOnAcrossDonorsOfTheSameState()
    {
        std::vector<float> values(Elements);
        std::iota(values.begin(), values.end(), valueAt(0)); // valueAt(i) for every i
        const auto digest = sha256Hex(values.data(), values.size() * sizeof(float));
        const auto offering = [](const std::string &h) {
            return header("state", stateInfoToJson({"s1", 5, Elements, 3, PartElements, h}));
        };
        const auto twoParts = [](std::uint64_t k) { return k < 2 ? goodPart(k) : std::vector<Frames>{}; };
        FakeDonor first(m_context, donorOf(offering(digest), twoParts));
        FakeDonor same(m_context, donorOf(offering(digest), goodPart));
        std::string why;
        BanList bans;
        auto s = downloadState({first.advert("first"), same.advert("same")}, "r", 5, Elements, quick(), m_running, &why,
                               nullptr, &bans);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->values, values);
        // 3 parts, and at most one request in vain (part 2, if the silent donor took it).
        const int partRequests = first.requests("part?") + same.requests("part?");
        QVERIFY2(partRequests >= 3 && partRequests <= 4, std::to_string(partRequests).c_str());
        QCOMPARE(bans.strikes("first", unixNow()), 0);
        FakeDonor again(m_context, donorOf(offering(digest), twoParts));
        FakeDonor liar(m_context, donorOf(offering(std::string(64, 'a')), goodPart));
        QVERIFY(!downloadState({again.advert("again"), liar.advert("liar")}, "r", 5, Elements, quick(), m_running, &why,
                               nullptr, &bans));
        QCOMPARE(liar.requests("part?"), 3);
        QVERIFY2(why.find("does not match the digest") != std::string::npos, why.c_str());
        QVERIFY(bans.isBanned("liar", unixNow())); // a whole state of its own, not the one it offered
        QCOMPARE(bans.strikes("again", unixNow()), 0);
    }

    // A donor whose snapshot is older than its advert claims is left after "state?" (no part is
    // asked, no strike) and the next donor is used.
    void donorBehindMinEpochIsSkipped()
    {
        RealDonor stale(5, std::vector<float>(Elements, 1.0F));
        RealDonor fresh(8, goodValues());
        BanList bans;
        std::string why;
        QVERIFY(!downloadState({stale.advert("stale", 9)}, "r", 8, Elements, {}, m_running, &why, nullptr, &bans));
        QVERIFY2(QString::fromStdString(why).contains("epoch 5, behind 8"), why.c_str());
        const auto s = downloadState({stale.advert("stale", 9), fresh.advert("fresh", 8)}, "r", 8, Elements, {},
                                     m_running, &why, nullptr, &bans);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->epoch, 8L);
        QVERIFY(s->values == goodValues());
        QCOMPARE(stale.service.served("state?"), 2LL);
        QCOMPARE(stale.service.served("part?"), 0LL);
        QCOMPARE(bans.strikes("stale", unixNow()), 0);
    }

    // An invalid answer is refused with its reason and struck; the next donor is used.
    void invalidAnswersAreRefusedAndStruck_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("reason");
        QTest::newRow("another element count") << 0 << "offers 11 state elements, this model has 10";
        QTest::newRow("inconsistent parts") << 1 << "layout is inconsistent";
        QTest::newRow("short part") << 2 << "part 1 has 12 bytes, expected 16";
        QTest::newRow("part without data") << 3 << "part 0 has 0 bytes, expected 16";
        QTest::newRow("infinite value") << 4 << "non-finite";
    }
    void invalidAnswersAreRefusedAndStruck()
    {
        QFETCH(int, which);
        QFETCH(QString, reason);
        const std::vector<FakeDonor::Answer> answers = {
            donorOf(stateHeader(5, Elements + 1, 3), goodPart),
            donorOf(stateHeader(5, Elements, 4), goodPart),
            donorOf(stateHeader(),
                    [](std::uint64_t k) {
                        return k == 1 ? std::vector<Frames>{{partHeader(k), partValues(k, -1)}} : goodPart(k);
                    }),
            donorOf(stateHeader(), [](std::uint64_t k) { return std::vector<Frames>{{partHeader(k)}}; }),
            donorOf(stateHeader(),
                    [](std::uint64_t k) {
                        auto values = partValues(k);
                        if (k == 2) {
                            const float inf = std::numeric_limits<float>::infinity();
                            std::memcpy(values.data() + sizeof(float), &inf, sizeof(float));
                        }
                        return std::vector<Frames>{{partHeader(k), values}};
                    }),
        };
        FakeDonor bad(m_context, answers[static_cast<std::size_t>(which)]);
        RealDonor good(6, goodValues());
        BanList bans;
        std::string why;
        QVERIFY(!downloadState({bad.advert("bad")}, "r", 5, Elements, quick(), m_running, &why, nullptr, &bans));
        QVERIFY2(QString::fromStdString(why).contains(reason), why.c_str());
        QVERIFY2(QString::fromStdString(why).startsWith("donor bad: "), why.c_str());
        QCOMPARE(bans.strikes("bad", unixNow()), 1);
        const auto s = downloadState({bad.advert("bad"), good.advert("good", 6)}, "r", 5, Elements, quick(), m_running,
                                     &why, nullptr, &bans);
        QVERIFY2(s.has_value(), why.c_str());
        QVERIFY(s->values == goodValues());
        QCOMPARE(bans.strikes("bad", unixNow()), 2);
        QCOMPARE(bans.strikes("good", unixNow()), 0);
    }

    // A part larger than announced is a part of the wrong size too.
    void oversizedPartIsStruck()
    {
        FakeDonor bad(m_context, donorOf(stateHeader(), [](std::uint64_t k) {
                          return std::vector<Frames>{{partHeader(k), partValues(k, +1)}};
                      }));
        BanList bans;
        std::string why;
        QVERIFY(!downloadState({bad.advert("bad")}, "r", 5, Elements, quick(), m_running, &why, nullptr, &bans));
        QCOMPARE(bans.strikes("bad", unixNow()), 1);
    }

    // Replies for another part or another snapshot are skipped; the requested one is used.
    void repliesForOtherPartsAreSkipped()
    {
        FakeDonor donor(m_context, donorOf(stateHeader(), [](std::uint64_t k) {
                            const std::string wrong(partValues(k).size(), '\x01'); // other, finite values
                            return std::vector<Frames>{{partHeader(k + 1), wrong},
                                                       {partHeader(k, "s0"), wrong},
                                                       {partHeader(k), partValues(k)}};
                        }));
        std::string why;
        const auto s = downloadState({donor.advert("d")}, "r", 5, Elements, quick(), m_running, &why);
        QVERIFY2(s.has_value(), why.c_str());
        for (std::size_t i = 0; i < Elements; ++i)
            QCOMPARE(s->values[i], valueAt(i));
        QCOMPARE(donor.requests("part?"), 3);
    }

    // Refusing, silent or unreachable donors are not at fault: no strike, and the next is tried
    // until maxDonors have been; banned donors are skipped without using up a try.
    void unhelpfulDonorsAreSkippedWithoutStrikes()
    {
        PeerService empty("r", "tcp://127.0.0.1:*", PartElements); // no state yet
        FakeDonor silent(m_context, [](const json &) { return std::vector<Frames>{}; });
        RealDonor good(6, goodValues());
        BanList bans;
        std::string why;
        const std::vector<DonorAdvert> donors{
            {"empty", empty.endpoint(), 9, {}}, silent.advert("silent", 8), good.advert("good", 6)};
        auto options = quick();
        options.maxDonors = 2;
        QVERIFY(!downloadState(donors, "r", 5, Elements, options, m_running, &why, nullptr, &bans));
        QVERIFY2(QString::fromStdString(why).contains("donor silent: donor did not answer"), why.c_str());
        QCOMPARE(empty.served("state?"), 1LL);
        QCOMPARE(good.service.served("state?"), 0LL);
        options.maxDonors = 3;
        const auto s = downloadState(donors, "r", 5, Elements, options, m_running, &why, nullptr, &bans);
        QVERIFY2(s.has_value(), why.c_str());
        QVERIFY(s->values == goodValues());
        QCOMPARE(good.service.served("state?"), 1LL); // its parts came over the connection it was asked on
        for (const char *who : {"empty", "silent", "good"})
            QCOMPARE(bans.strikes(who, unixNow()), 0);

        BanList banned;
        banned.strike("empty", "test", unixNow(), 3);
        options.maxDonors = 1;
        QVERIFY(downloadState({donors[0], donors[2]}, "r", 5, Elements, options, m_running, &why, nullptr, &banned));
        QCOMPARE(empty.served("state?"), 2LL); // not asked a third time

        QVERIFY(!downloadState({}, "r", 5, Elements, options, m_running, &why));
        QCOMPARE(why, std::string("no state donor at epoch 5 or later"));
    }

    // The stop flag ends a download between parts and no part is asked of another donor; set from
    // the start, no donor is asked anything.
    void stopEndsTheDownloadBetweenParts()
    {
        constexpr std::uint64_t Large = 1000;
        std::atomic<bool> stop{false};
        FakeDonor slow(m_context, [&](const json &request) -> std::vector<Frames> {
            if (request.at("t") == "state?")
                return {{header("state", stateInfoToJson({"s1", 5, Large, Large, 1, {}}))}};
            const auto k = request.at("k").get<std::uint64_t>();
            if (k == 3)
                stop = true;
            return {{partHeader(k), std::string(sizeof(float), '\0')}};
        });
        RealDonor next(5, std::vector<float>(Large, 1.0F));
        std::string why;
        QVERIFY(!downloadState({slow.advert("slow"), next.advert("next", 5)}, "r", 5, Large, {}, stop, &why));
        QVERIFY2(QString::fromStdString(why).contains("stopped"), why.c_str());
        QVERIFY2(slow.requests("part?") >= 4 && slow.requests("part?") <= 5,
                 qPrintable(QString::number(slow.requests("part?"))));
        QCOMPARE(next.service.served("state?") + 10 * next.service.served("part?"), 1LL); // only asked its offer

        QVERIFY(!downloadState({next.advert("next", 5)}, "r", 5, Large, {}, stop, &why));
        QCOMPARE(next.service.served("state?"), 1LL);
    }

    // Stopping while a donor is silent ends the download soon, not at the part timeout.
    void stopEndsTheWaitForASilentDonor()
    {
        FakeDonor silent(m_context, [](const json &) { return std::vector<Frames>{}; });
        std::atomic<bool> stop{false};
        StateDownloadOptions options;
        options.partTimeout = 3.0;
        std::thread stopper([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            stop = true;
        });
        const auto start = Clock::now();
        std::string why;
        QVERIFY(!downloadState({silent.advert("silent")}, "r", 5, Elements, options, stop, &why));
        const double waited = secondsSince(start);
        stopper.join();
        QVERIFY2(waited < options.partTimeout / 2, qPrintable(QString::number(waited)));
    }

    // A donor that answers every part? only with replies for another part, one every 0.1 s, is
    // given up one part timeout after the request: the replies do not extend the wait.
    void dripsOfOtherPartsDoNotHoldTheDownload()
    {
        FakeDonor drip(
            m_context,
            donorOf(stateHeader(),
                    [](std::uint64_t k) {
                        return std::vector<Frames>(40, Frames{partHeader(k + 1), partValues(k + 1)});
                    }),
            0.1);
        RealDonor good(6, goodValues());
        const auto start = Clock::now();
        std::string why;
        const auto s = downloadState({drip.advert("drip"), good.advert("good", 6)}, "r", 5, Elements, quick(),
                                     m_running, &why);
        const double waited = secondsSince(start);
        QVERIFY2(s.has_value(), why.c_str());
        QVERIFY(s->values == goodValues());
        QCOMPARE(drip.requests("part?"), 1);
        // quick(): 0.3 s a part; 40 replies 0.1 s apart would have held it 4 s.
        QVERIFY2(waited < 2.0, qPrintable(QString::number(waited)));
    }

    // Header fields of the wrong type refuse that donor, like any invalid answer; the download
    // goes on with the next donor instead of throwing.
    void fieldsOfTheWrongTypeDoNotEscape_data()
    {
        QTest::addColumn<int>("which");
        QTest::newRow("refusal with a numeric reason") << 0;
        QTest::newRow("part with a numeric snapshot id") << 1;
        QTest::newRow("part with a text index") << 2;
        QTest::newRow("part refused with a numeric reason") << 3;
    }
    void fieldsOfTheWrongTypeDoNotEscape()
    {
        QFETCH(int, which);
        const std::vector<FakeDonor::Answer> answers = {
            [](const json &) {
                return std::vector<Frames>{{header("refuse", {{"why", 42}})}};
            },
            donorOf(stateHeader(),
                    [](std::uint64_t) {
                        return std::vector<Frames>{{header("part", {{"i", 1}, {"k", 0}})}};
                    }),
            donorOf(stateHeader(),
                    [](std::uint64_t) {
                        return std::vector<Frames>{{header("part", {{"i", "s1"}, {"k", "0"}})}};
                    }),
            donorOf(stateHeader(),
                    [](std::uint64_t) {
                        return std::vector<Frames>{{header("refuse", {{"why", 42}})}};
                    }),
        };
        FakeDonor bad(m_context, answers[static_cast<std::size_t>(which)]);
        RealDonor good(6, goodValues());
        std::string why, thrown;
        std::optional<StateSnapshot> s;
        try {
            s = downloadState({bad.advert("bad"), good.advert("good", 6)}, "r", 5, Elements, quick(), m_running, &why);
        } catch (const std::exception &e) {
            thrown = e.what();
        }
        QVERIFY2(thrown.empty(), thrown.c_str());
        QVERIFY2(s.has_value(), why.c_str());
        QVERIFY(s->values == goodValues());
    }
};

QTEST_GUILESS_MAIN(TestStateDownload)
#include "tst_statedownload.moc"
