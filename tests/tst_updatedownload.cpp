// Replaying averaged updates (core/averaging/UpdateArchive.h, UpdateDownload.h): a real
// PeerService serves the chain it was given, an UpdateFetcher gets each update bit for bit over
// several chunks, and epochs the donor does not keep, a broken chain and malformed requests are
// refused without taking the service down.
#include "averaging/PeerService.h"
#include "averaging/UpdateDownload.h"
#include "net/WireMessage.h"
#include "FakeDonor.h"

#include <QtTest>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <memory>

using namespace dedloc;

namespace {

// An fp32 update of `elements` values, in pieces of 100000, every value depending on the epoch.
std::shared_ptr<const AveragedUpdate> update(long epoch, std::uint64_t elements)
{
    std::vector<EncodedPiece> pieces;
    for (std::uint64_t o = 0; o < elements; o += 100000) {
        const auto n = std::min<std::uint64_t>(100000, elements - o);
        std::vector<float> v(n);
        for (std::uint64_t k = 0; k < n; ++k)
            v[k] = static_cast<float>(epoch) + static_cast<float>(o + k) * 1e-6F;
        EncodedPiece p{o, n, std::vector<std::uint8_t>(encodedBytes(Compression::None, n))};
        encodeInto(Compression::None, v, p.bytes);
        pieces.push_back(std::move(p));
    }
    return std::make_shared<const AveragedUpdate>(*assembleUpdate(epoch, 64, Compression::None, elements, pieces));
}

} // namespace

class TestUpdateDownload final : public QObject {
    Q_OBJECT

    static constexpr std::uint64_t Elements = 300001; // 1.2 MB: three chunks
    std::atomic<bool> m_stop{false};

  private Q_SLOTS:
    void aChainIsServedBitForBit()
    {
        PeerService donor("r");
        for (long e = 4; e <= 6; ++e)
            donor.addUpdate(update(e, Elements));
        const DonorAdvert advert{"donor", donor.endpoint(), 7, {}};
        UpdateFetcher f(advert, "r", Elements, 5.0, m_stop);
        for (long e = 4; e <= 6; ++e) {
            const auto u = f.fetch(e);
            QVERIFY2(u.has_value(), f.why().c_str());
            QCOMPARE(u->bytes, update(e, Elements)->bytes);
            QCOMPARE(u->pieces, update(e, Elements)->pieces);
            QCOMPARE(u->batchSamples, 64L);
        }
        QVERIFY(!f.fetch(7)); // not kept: refused at once, not an offence
        QVERIFY(f.why().find("no update of epoch 7") != std::string::npos);
        QVERIFY(!f.invalid());
        QCOMPARE(donor.served("upart?"), 9LL);
        // An update that does not follow the last one starts a new chain.
        donor.addUpdate(update(9, Elements));
        QVERIFY(!f.fetch(6));
        QVERIFY(f.fetch(9).has_value());
        donor.clearUpdates();
        QVERIFY(!f.fetch(9));
    }

    void anotherModelOrRunIsRefused()
    {
        PeerService donor("r");
        donor.addUpdate(update(4, Elements));
        const DonorAdvert advert{"donor", donor.endpoint(), 5, {}};
        UpdateFetcher otherModel(advert, "r", Elements - 1, 5.0, m_stop);
        QVERIFY(!otherModel.fetch(4));
        QVERIFY(otherModel.invalid());
        UpdateFetcher otherRun(advert, "other", Elements, 5.0, m_stop);
        QVERIFY(!otherRun.fetch(4));
        QVERIFY(otherRun.why().find("unknown run") != std::string::npos);
        // A malformed request is refused (and struck), the service goes on serving.
        ServiceClient raw(donor.endpoint());
        raw.send("upart?", {{"e", 4}, {"k", 99}});
        const auto r = raw.receive(5.0);
        QVERIFY(r && r->header.at("t") == "refuse");
        UpdateFetcher good(advert, "r", Elements, 5.0, m_stop);
        QVERIFY(good.fetch(4).has_value());
    }

    // A donor that answers update? only with updates of another epoch, one every 0.1 s, is given
    // up one timeout after the request, not one timeout after its last answer.
    void answersForOtherEpochsDoNotHoldTheFetch()
    {
        zmq::context_t context;
        const auto other = encodeServiceMessage("update", {{"e", 3}});
        test::FakeDonor drip(
            context,
            [&](const nlohmann::json &) {
                return std::vector<test::Frames>(40, test::Frames{std::string(other.begin(), other.end())});
            },
            0.1);
        UpdateFetcher f(drip.advert("drip"), "r", Elements, 0.5, m_stop);
        const auto start = std::chrono::steady_clock::now();
        QVERIFY(!f.fetch(4));
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        QCOMPARE(f.why(), std::string("donor did not answer"));
        QVERIFY2(waited < 2.0, qPrintable(QString::number(waited))); // 40 answers 0.1 s apart: 4 s
    }
};

QTEST_GUILESS_MAIN(TestUpdateDownload)
#include "tst_updatedownload.moc"
