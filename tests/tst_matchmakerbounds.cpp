// Matchmaking against a leader that lies or breaks (core/averaging/Matchmaker.h, follow(); docs/
// PROTOCOL.md "Bounds on what a peer claims"): a hand-made leader (tests/support/
// MatchmakerFixtures.h FakeLeader) that accepts and never begins, sends a BEGIN that leaves itself
// out, changes the follower, hands itself the vector, or mistypes its fields. The follower must
// refuse without throwing, never ask that leader again in the epoch, and strike it (a leader
// that holds it a third time is banned).
#include "MatchmakerFixtures.h"
#include "averaging/BanList.h"
#include "util/Clock.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

using namespace dedloc;
using namespace dedloc::test;

namespace {

constexpr auto &message = encodeServiceMessage;

// Replies whose fields have the wrong types; what the follower must make of them.
struct MistypedReply {
    const char *name;
    FakeLeader::Script script;
    bool forms;         // a group forms
    const char *reason; // in the follower's reason when none does
};
const std::vector<MistypedReply> mistypedReplies = {
    {"accept with a text deadline",
     [](const FakeLeader &l, const JoinRequest &j) {
         const GroupInfo g{"e3-fake", 3, {l.asMember(), {j.peerId, "", 0.0, 1.0, j.publicKey}}};
         return Replies{message("accept", {{"d", "soon"}}), message("begin", groupToJson(g))};
     },
     true, ""},
    {"refuse with a numeric reason",
     [](const FakeLeader &, const JoinRequest &) {
         return Replies{message("refuse", {{"why", 42}})};
     },
     false, "refused: ?"},
    {"disband with a numeric reason",
     [](const FakeLeader &, const JoinRequest &) {
         return Replies{message("accept", {{"d", unixNow() + 1.0}}), message("disband", {{"why", 7}})};
     },
     false, "disbanded: ?"},
};

// A follower with its own BanList, and a leader that accepts it (naming a deadline `acceptFor`
// seconds away) and never begins.
// `banOptions`: the follower's BanList's (many strikes to ban: only LeaderHolds' count bans).
struct HeldFollower {
    explicit HeldFollower(double acceptFor, BanOptions banOptions = {})
        : leader([acceptFor](const FakeLeader &, const JoinRequest &) {
              return Replies{message("accept", {{"d", unixNow() + acceptFor}})};
          }),
          bans(std::make_shared<BanList>(banOptions)),
          follower(followerOf(leader, options, bans))
    {
    }
    [[nodiscard]] int strikes() const { return bans->strikes(leader.identity.peerId(), unixNow()); }
    // The follower's search for a group of (3, "s"), expecting 2 peers, on a thread of its own.
    [[nodiscard]] std::future<std::optional<FormedGroup>> search(const std::atomic<bool> &stop, std::string *why)
    {
        return std::async(std::launch::async, [this, &stop, why] {
            return follower->matchmaker->formGroup(3, "s", [] { return std::size_t(2); }, stop, why);
        });
    }

    FakeLeader leader;
    MatchmakingOptions options = fastOptions();
    std::shared_ptr<BanList> bans;
    std::unique_ptr<Peer> follower;
};

// BanOptions under which strikes alone never ban within a test.
BanOptions strikesNeverBan()
{
    BanOptions o;
    o.strikesToBan = 100;
    return o;
}

} // namespace

class TestMatchmakerBounds final : public QObject {
    Q_OBJECT

    // A follower asks `leader` once, refuses its BEGIN with `reason`, never asks it again in
    // that epoch, and gives it one strike (it held the follower).
    static void expectRefusedOnce(FakeLeader &leader, const char *reason, bool capShares = false)
    {
        auto options = fastOptions();
        options.capShares = capShares;
        const auto bans = std::make_shared<BanList>();
        auto follower = followerOf(leader, options, bans);
        QVERIFY(leader.declare(3, "s", unixNow() + 30.0));
        const auto out = formGroupGuarded(*follower->matchmaker, options);
        QVERIFY2(out.finished && out.thrown.empty(), out.thrown.c_str());
        QVERIFY(!out.group);
        QVERIFY2(QString::fromStdString(out.why).contains(QString::fromLatin1(reason)), out.why.c_str());
        QCOMPARE(leader.joins.load(), 1);
        QCOMPARE(bans->strikes(leader.identity.peerId(), unixNow()), 1);
    }

private Q_SLOTS:
    // A leader that accepts a join and then never sends BEGIN may be holding the follower on
    // purpose: after waiting out the deadline it gave (`d`, 0.2 s away) plus the request timeout,
    // the follower does not ask it again in this epoch, although its declaration stays valid and
    // the follower's own window (4 s) leaves time to.
    void leaderThatNeverBeginsIsAskedOnce()
    {
        FakeLeader leader([](const FakeLeader &, const JoinRequest &) {
            return Replies{message("accept", {{"d", unixNow() + 0.2}})};
        });
        auto options = fastOptions();
        options.window = 4.0;
        auto follower = followerOf(leader, options);
        QVERIFY(leader.declare(3, "s", unixNow() + 30.0));
        const auto out = formGroupGuarded(*follower->matchmaker, options);
        QVERIFY2(out.finished && out.thrown.empty(), out.thrown.c_str());
        QVERIFY(!out.group);
        QVERIFY2(QString::fromStdString(out.why).contains(QStringLiteral("never began")), out.why.c_str());
        QCOMPARE(leader.joins.load(), 1);
    }

    // Held once, a follower strikes the leader (it may have crashed); held at a third epoch, it
    // bans it and asks it no more (the rule itself: tst_leaderholds), strikes aside: the count
    // of epochs bans it, not three strikes within a minute.
    void aLeaderThatHoldsAFollowerThreeTimesIsBanned()
    {
        HeldFollower f(0.2, strikesNeverBan());
        const auto id = f.leader.identity.peerId();
        for (int hold = 1; hold <= 4; ++hold) {
            QVERIFY(f.leader.declare(hold, "s", unixNow() + 30.0));
            const auto out = formGroupGuarded(*f.follower->matchmaker, f.options, hold);
            QVERIFY2(out.finished && out.thrown.empty() && !out.group, out.thrown.c_str());
            QCOMPARE(f.leader.joins.load(), std::min(hold, 3));
            QCOMPARE(f.bans->isBanned(id, unixNow()), hold >= 3);
            if (hold < 3)
                QCOMPARE(f.strikes(), hold);
        }
    }

    // Held three times at one epoch (three searches for it), a leader is struck each time and
    // not banned by the count of epochs: a search is asked again at one epoch only after a
    // failed step, and a crashed leader's epoch is one.
    void holdsAtOneEpochDoNotBanByTheirCount()
    {
        HeldFollower f(0.2, strikesNeverBan());
        const auto id = f.leader.identity.peerId();
        for (int hold = 1; hold <= 3; ++hold) {
            QVERIFY(f.leader.declare(3, "s", unixNow() + 30.0));
            const auto out = formGroupGuarded(*f.follower->matchmaker, f.options, 3);
            QVERIFY2(out.finished && out.thrown.empty() && !out.group, out.thrown.c_str());
            QCOMPARE(f.strikes(), hold);
        }
        QVERIFY(!f.bans->isBanned(id, unixNow()));
    }

    // The accept's deadline counts in seconds on the leader's clock (`d` - `n`): a leader whose
    // clock is 10 s behind this peer's, and whose BEGIN follows its accept, forms the group
    // unblamed (read as a time on this peer's clock, its deadline had passed on arrival); one
    // whose clock is 10 s ahead and never begins is struck (read so, its deadline lay past this
    // peer's window).
    void aLeaderIsTimedByItsOwnClock()
    {
        const double skews[] = {-10.0, 10.0};
        for (const double skew : skews) {
            FakeLeader leader([skew](const FakeLeader &l, const JoinRequest &j) {
                const double now = unixNow() + skew;
                Replies replies{message("accept", {{"d", now + 0.3}, {"n", now}})};
                if (skew < 0) {
                    const GroupInfo g{"e3-fake", 3, {l.asMember(), {j.peerId, "", 0.0, 1.0, j.publicKey}}};
                    replies.push_back(message("begin", groupToJson(g)));
                }
                return replies;
            });
            const auto options = fastOptions();
            const auto bans = std::make_shared<BanList>(strikesNeverBan());
            auto follower = followerOf(leader, options, bans);
            QVERIFY(leader.declare(3, "s", unixNow() + 30.0));
            const auto out = formGroupGuarded(*follower->matchmaker, options);
            QVERIFY2(out.finished && out.thrown.empty(), out.thrown.c_str());
            QCOMPARE(out.group.has_value(), skew < 0);
            QCOMPARE(bans->strikes(leader.identity.peerId(), unixNow()), skew < 0 ? 0 : 1);
            if (skew > 0)
                QVERIFY2(QString::fromStdString(out.why).contains(QStringLiteral("never began")), out.why.c_str());
        }
    }

    // A leader that accepts and then disbands without naming a leader to ask instead is not
    // asked again in the epoch (a holder could send it just before its deadline, again and
    // again), and not struck (an honest leader that stops does the same).
    void aLeaderThatDisbandsIsAskedOnceAndNotStruck()
    {
        FakeLeader leader([](const FakeLeader &, const JoinRequest &) {
            return Replies{message("accept", {{"d", unixNow() + 0.3}, {"n", unixNow()}}),
                           message("disband", {{"why", "the leader gave up"}})};
        });
        const auto options = fastOptions();
        const auto bans = std::make_shared<BanList>();
        auto follower = followerOf(leader, options, bans);
        QVERIFY(leader.declare(3, "s", unixNow() + 30.0));
        const auto out = formGroupGuarded(*follower->matchmaker, options);
        QVERIFY2(out.finished && out.thrown.empty() && !out.group, out.thrown.c_str());
        QVERIFY2(QString::fromStdString(out.why).contains(QStringLiteral("disbanded")), out.why.c_str());
        QCOMPARE(leader.joins.load(), 1);
        QCOMPARE(bans->strikes(leader.identity.peerId(), unixNow()), 0);
    }

    // A search stopped while it waits for a BEGIN blames nobody: the leader had time left.
    void aStoppedSearchStrikesNobody()
    {
        HeldFollower f(1.5);
        QVERIFY(f.leader.declare(3, "s", unixNow() + 30.0));
        std::atomic<bool> stop{false};
        std::string why;
        auto search = f.search(stop, &why);
        QTRY_COMPARE_WITH_TIMEOUT(f.leader.joins.load(), 1, 5000);
        stop = true;
        QVERIFY(!search.get());
        QCOMPARE(QString::fromStdString(why), QStringLiteral("stopped"));
        QCOMPARE(f.strikes(), 0);
    }

    // A leader banned while the follower waits for its BEGIN (its result of an earlier round
    // failed the check meanwhile) is left at once: the follower looks on without it and never
    // averages with it, although its deadline had time left.
    void aLeaderBannedWhileItGathersIsLeft()
    {
        HeldFollower f(20.0);
        QVERIFY(f.leader.declare(3, "s", unixNow() + 30.0));
        std::atomic<bool> stop{false};
        std::string why;
        auto search = f.search(stop, &why);
        QTRY_COMPARE_WITH_TIMEOUT(f.leader.joins.load(), 1, 5000);
        QVERIFY(f.bans->ban(f.leader.identity.peerId(), "its result failed the check", unixNow()));
        QVERIFY(search.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
        QVERIFY(!search.get());
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("banned while it gathered")), why.c_str());
        QCOMPARE(f.leader.joins.load(), 1);
    }

    // A leader that gathers longer than this peer waits (another --matchmaking-time: its accept
    // names a deadline past this peer's window) is given up on at the end of the window, and not
    // struck: it has not broken the deadline it named.
    void aLeaderGatheringLongerThanThisPeerWaitsIsNotStruck()
    {
        HeldFollower f(30.0);
        QVERIFY(f.leader.declare(3, "s", unixNow() + 30.0));
        const auto start = std::chrono::steady_clock::now();
        const auto out = formGroupGuarded(*f.follower->matchmaker, f.options);
        QVERIFY2(out.finished && out.thrown.empty() && !out.group, out.thrown.c_str());
        QVERIFY2(QString::fromStdString(out.why).contains(QStringLiteral("did not begin within")), out.why.c_str());
        QVERIFY(seconds(start) < 1.5 * f.options.window + 3 * f.options.requestTimeout + 1.0); // one more declaration
        QCOMPARE(f.leader.joins.load(), 1);
        QCOMPARE(f.strikes(), 0);
    }

    // Two peers held by a leader that accepts them and never begins (a real matchmaker with
    // neverBegin, declared first so that it orders before them) form their group of two without
    // it in the same search: each declares itself again once the leader's deadline has passed.
    void peersHeldByALeaderFormTheirGroupWithoutIt()
    {
        auto options = fastOptions();
        options.window = 4.0; // the holder asks nobody itself before half its window
        auto peers = makePeers({false, false, false}, options);
        auto hold = options;
        hold.neverBegin = true;
        auto &holder = *peers[0];
        holder.matchmaker = std::make_unique<Matchmaker>(
            *holder.dht, holder.service.get(),
            MatchSelf{holder.identity.peerId(), "mm-test", "tcp://127.0.0.1:10", -1.0, false, true, holder.identity.publicKey()},
            hold);
        std::atomic<bool> stop{false};
        const auto expect3 = [] { return std::size_t(3); };
        auto held = std::async(std::launch::async, [&] { return holder.matchmaker->formGroup(3, "s", expect3, stop); });
        std::this_thread::sleep_for(std::chrono::milliseconds(500)); // its deadline is the earliest
        const auto start = std::chrono::steady_clock::now();
        auto a = std::async(std::launch::async, [&] { return peers[1]->matchmaker->formGroup(3, "s", expect3, stop); });
        auto b = std::async(std::launch::async, [&] { return peers[2]->matchmaker->formGroup(3, "s", expect3, stop); });
        const auto ga = a.get(), gb = b.get();
        const auto gh = held.get();
        QVERIFY2(!gh, gh ? qPrintable(QString::number(gh->info.members.size())) : "");
        QVERIFY(ga && gb);
        QCOMPARE(ga->info.groupId, gb->info.groupId);
        QCOMPARE(ga->info.members.size(), std::size_t(2));
        for (const auto &m : ga->info.members)
            QVERIFY(m.peerId != holder.identity.peerId());
        // Within the search's bound with a second declaration (Matchmaker.h).
        QVERIFY2(seconds(start) < 1.5 * options.window + 3 * options.requestTimeout + 1.0,
                 qPrintable(QString::number(seconds(start))));
    }

    // A BEGIN that lists the follower and another peer but not the leader that sent it is
    // refused (the follower would average with peers nobody vouched for), and that leader is
    // not asked again in this epoch.
    void beginWithoutTheLeaderIsRefused()
    {
        const auto stranger = PeerIdentity::generate();
        FakeLeader leader([&stranger](const FakeLeader &, const JoinRequest &j) {
            const GroupInfo g{"e3-fake",
                              3,
                              {{stranger.peerId(), "tcp://127.0.0.1:8", -1.0, 1.0, stranger.publicKey(), ShardShareTotal},
                               {j.peerId, "", 0.0, 1.0, j.publicKey}}};
            return Replies{message("accept", {{"d", unixNow() + 2.0}}), message("begin", groupToJson(g))};
        });
        expectRefusedOnce(leader, "does not list the leader");
    }

    // A leader cannot hand itself the vector: a BEGIN whose shares are not those its listed
    // bandwidths give (two reducers of 10: half each, not all to the leader), or, in an open run,
    // not capped at twice an even share (a leader listing 1e5 beside two members of 10 would
    // take all of it; capped: two thirds), is refused and that leader not asked again.
    void beginWithSharesItsBandwidthsDoNotGiveIsRefused_data()
    {
        QTest::addColumn<double>("leaderBandwidth");
        QTest::addColumn<qint64>("leaderShare");
        QTest::addColumn<bool>("capShares");
        QTest::newRow("all to the leader, equal bandwidths") << 10.0 << qint64(ShardShareTotal) << false;
        QTest::newRow("uncapped shares in an open run") << 1e5 << qint64(ShardShareTotal) << true;
    }
    void beginWithSharesItsBandwidthsDoNotGiveIsRefused()
    {
        QFETCH(double, leaderBandwidth);
        QFETCH(qint64, leaderShare);
        QFETCH(bool, capShares);
        const auto a = PeerIdentity::generate(), b = PeerIdentity::generate();
        FakeLeader leader([&](const FakeLeader &l, const JoinRequest &j) {
            GroupInfo g{"e3-fake", 3, {l.asMember(), {j.peerId, "", 0.0, 1.0, j.publicKey}}};
            g.members[0].bandwidth = leaderBandwidth;
            g.members[0].share = leaderShare;
            g.members.push_back({a.peerId(), "tcp://127.0.0.1:7", 10.0, 1.0, a.publicKey(), ShardShareTotal - leaderShare});
            g.members.push_back({b.peerId(), "tcp://127.0.0.1:6", 10.0, 1.0, b.publicKey(), 0});
            return Replies{message("accept", {{"d", unixNow() + 2.0}}), message("begin", groupToJson(g))};
        });
        expectRefusedOnce(leader, "shard share", capShares);
    }

    // A leader cannot change what a follower joined as: a BEGIN that marks it as asking for
    // repair (it would then take the others' state in the state round) or as an auxiliary (it
    // would send no gradient) is refused, and that leader is not asked again in this epoch.
    void beginThatChangesTheFollowerIsRefused_data()
    {
        QTest::addColumn<bool>("repair");
        QTest::addColumn<double>("weight");
        QTest::newRow("repair it did not ask for") << true << 1.0;
        QTest::newRow("auxiliary instead of sender") << false << 0.0;
    }
    void beginThatChangesTheFollowerIsRefused()
    {
        QFETCH(bool, repair);
        QFETCH(double, weight);
        FakeLeader leader([repair, weight](const FakeLeader &l, const JoinRequest &j) {
            GroupInfo g{"e3-fake", 3, {l.asMember(), {j.peerId, "", 0.0, weight, j.publicKey}}};
            g.members[1].repair = repair;
            if (weight == 0.0) // a client-mode member must send: make it look valid otherwise
                g.members[1].endpoint = "tcp://127.0.0.1:7";
            return Replies{message("accept", {{"d", unixNow() + 2.0}}), message("begin", groupToJson(g))};
        });
        expectRefusedOnce(leader, "otherwise than it joined");
    }

    // A leader's reply with a field of the wrong type never throws out of formGroup: a
    // deadline that is no number falls back to the declared one (and the group still forms), a
    // reason that is no text reads "?".
    void mistypedRepliesDoNotThrow_data()
    {
        QTest::addColumn<int>("which");
        for (std::size_t i = 0; i < mistypedReplies.size(); ++i)
            QTest::newRow(mistypedReplies[i].name) << static_cast<int>(i);
    }
    void mistypedRepliesDoNotThrow()
    {
        QFETCH(int, which);
        const auto &c = mistypedReplies[static_cast<std::size_t>(which)];
        FakeLeader leader(c.script);
        const auto options = fastOptions();
        auto follower = followerOf(leader, options);
        QVERIFY(leader.declare(3, "s", unixNow() + 30.0));
        const auto out = formGroupGuarded(*follower->matchmaker, options);
        QVERIFY2(out.finished && out.thrown.empty(), out.thrown.c_str());
        QCOMPARE(out.group.has_value(), c.forms);
        if (c.forms) {
            QCOMPARE(out.group->info.groupId, std::string("e3-fake"));
            QCOMPARE(out.group->info.members[out.group->myIndex].peerId, follower->identity.peerId());
            QVERIFY(!out.group->leader);
        } else {
            QVERIFY2(QString::fromStdString(out.why).contains(QLatin1String(c.reason)), out.why.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestMatchmakerBounds)
#include "tst_matchmakerbounds.moc"
