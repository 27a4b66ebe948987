// Which donor a state download trusts first (core/averaging/StateDownload.h downloadState): real
// PeerService donors, one of them a stranger serving finite garbage at a later epoch than the
// honest ones (so that it ranks first by epoch).
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
};

QTEST_APPLESS_MAIN(TestDonorCorroboration)
#include "tst_donorcorroboration.moc"
