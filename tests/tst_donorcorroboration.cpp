// Which donor a state download trusts first (core/averaging/StateDownload.h downloadState): real
// PeerService donors, one of them a stranger serving finite garbage at a later epoch than the
// honest ones (so that it ranks first by epoch).
#include "averaging/BanList.h"
#include "averaging/PeerService.h"
#include "averaging/StateDownload.h"

#include <QTest>

#include <atomic>
#include <memory>

using namespace dedloc;

namespace {

struct Donor {
    PeerService service;
    Donor(long epoch, std::vector<float> values) : service("r", "tcp://127.0.0.1:*", 4)
    {
        service.setState(std::make_shared<StateSnapshot>(StateSnapshot{epoch, std::move(values)}));
    }
    [[nodiscard]] DonorAdvert advert(const std::string &peerId, long epoch) const
    {
        return {peerId, service.endpoint(), epoch, {}};
    }
};

const std::vector<float> Honest{1.0F, 2.0F, 3.0F, 4.0F, 5.0F, 6.0F, 7.0F, 8.0F, 9.0F, 10.0F};
const std::vector<float> Garbage{7e3F, -7e3F, 7e3F, -7e3F, 7e3F, -7e3F, 7e3F, -7e3F, 7e3F, -7e3F};

} // namespace

class TestDonorCorroboration final : public QObject {
    Q_OBJECT

    std::atomic<bool> m_stop{false};

private Q_SLOTS:
    // Two honest donors agree on epoch 7; the stranger offers epoch 8 and ranks first. The
    // download takes the state two donors vouch for, and asks the stranger for no part.
    void aStateTwoDonorsOfferComesFirst()
    {
        Donor evil(8, Garbage), a(7, Honest), b(7, Honest);
        const auto ranked = rankDonors({a.advert("a", 7), evil.advert("evil", 8), b.advert("b", 7)}, 7);
        QCOMPARE(ranked.front().peerId, std::string("evil"));
        std::string why;
        const auto s = downloadState(ranked, "r", 7, Honest.size(), {}, m_stop, &why);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->epoch, 7L);
        QCOMPARE(s->values, Honest);
        QCOMPARE(evil.service.served("part?"), 0LL);
    }

    // Nobody confirms anybody (one donor each): the ranking stands, as before.
    void withoutAgreementTheRankingStands()
    {
        Donor evil(8, Garbage), a(7, Honest);
        std::string why;
        const auto s = downloadState(rankDonors({a.advert("a", 7), evil.advert("evil", 8)}, 7), "r", 7, Honest.size(),
                                     {}, m_stop, &why);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->epoch, 8L);
    }

    // With a vouch rule: the stranger's state is asked about but refused before any part, without
    // a strike (an honest donor may be a step ahead of the records); the vouched one is taken.
    // The rule sees each donor's real (epoch, digest), the digest PeerService::stateDigest() gives.
    void aStateNobodyVouchesForIsNotFetched()
    {
        Donor evil(8, Garbage), a(7, Honest);
        const auto honestDigest = a.service.stateDigest();
        QCOMPARE(honestDigest.first, 7L);
        QCOMPARE(honestDigest.second.size(), std::size_t(64));
        StateDownloadOptions o;
        std::vector<std::string> asked;
        o.vouch = [&](const std::string &donor, long epoch, const std::string &digest) {
            asked.push_back(donor + "@" + std::to_string(epoch));
            return epoch == honestDigest.first && digest == honestDigest.second ? std::string() : std::string("nobody");
        };
        BanList bans;
        std::string why;
        const auto s = downloadState(rankDonors({a.advert("a", 7), evil.advert("evil", 8)}, 7), "r", 7, Honest.size(),
                                     o, m_stop, &why, nullptr, &bans);
        QVERIFY2(s.has_value(), why.c_str());
        QCOMPARE(s->values, Honest);
        QCOMPARE(asked, (std::vector<std::string>{"evil@8", "a@7"}));
        QCOMPARE(evil.service.served("part?"), 0LL);
        QCOMPARE(bans.strikes("evil", 0.0), 0);
        // Nobody vouched for: nothing is taken, and the reason says so.
        o.vouch = [](const std::string &, long, const std::string &) { return std::string("claimed by 1 peer(s)"); };
        QVERIFY(!downloadState(rankDonors({evil.advert("evil", 8)}, 7), "r", 7, Honest.size(), o, m_stop, &why));
        QVERIFY2(why.find("not vouched for: claimed by 1 peer(s)") != std::string::npos, why.c_str());
    }
};

QTEST_APPLESS_MAIN(TestDonorCorroboration)
#include "tst_donorcorroboration.moc"
