// The state digests of joins and groups (averaging/SwarmMessages.h JoinRequest::stateDigest,
// GroupMember::stateDigest, GroupInfo::statesAgree): what decides whether a group's periodic
// state round can be left out, through the wire encoding, and their refusals.
#include "averaging/SwarmMessages.h"
#include "net/PeerIdentity.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <vector>

using namespace dedloc;
using nlohmann::json;

namespace {

const PeerIdentity &peer(int i)
{
    static const PeerIdentity identities[] = {PeerIdentity::generate(), PeerIdentity::generate(),
                                              PeerIdentity::generate()};
    return identities[i];
}

std::string digestOf(const std::vector<float> &state)
{
    return sha256Hex(state.data(), state.size() * sizeof(float));
}

// Three trainers (one in client mode) of one state, as a leader lists them.
GroupInfo groupOfOneState(const std::string &digest)
{
    GroupInfo g{"g1", 9, {}};
    const std::int64_t shares[] = {ShardShareTotal / 2, ShardShareTotal - ShardShareTotal / 2, 0};
    for (int i = 0; i < 3; ++i) {
        const auto &p = peer(i);
        g.members.push_back({p.peerId(), i < 2 ? "tcp://127.0.0.1:" + std::to_string(7000 + i) : std::string(), 10.0,
                             1.0, p.publicKey(), shares[i], false, digest});
    }
    return g;
}

QString refusalOf(const std::function<void()> &parse)
{
    try {
        parse();
    } catch (const ProtocolError &e) {
        return QString::fromUtf8(e.what());
    }
    return QStringLiteral("<no exception>");
}

} // namespace

class TestStateDigests : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // A join carries its digest through the wire; a join without one parses to "".
    void joinCarriesTheDigest()
    {
        const auto digest = digestOf({1.0f, 2.0f, 3.0f});
        JoinRequest r{"run-1", 9, "s", peer(0).peerId(), "tcp://127.0.0.1:9", 12.5, false, true, peer(0).publicKey(),
                      false, 3, digest};
        const auto parsed = joinFromJson(parseServiceMessage(encodeServiceMessage("join", joinToJson(r))));
        QCOMPARE(parsed.stateDigest, digest);
        r.stateDigest.clear();
        const auto j = joinToJson(r);
        QVERIFY(!j.contains("d")); // nothing on the wire when there is nothing to compare
        QCOMPARE(joinFromJson(j).stateDigest, std::string());
    }

    // Equal digests, none empty, nobody repairing: the states agree. Any one member otherwise
    // (another state, no digest, as a monitor or an auxiliary sends; asking for repair) keeps the
    // round, and so does the decision every member reads from the leader's BEGIN.
    void statesAgreeOnlyWhenEveryMemberHoldsTheSameState()
    {
        const auto digest = digestOf({0.5f, -1.0f});
        const auto agree = groupOfOneState(digest);
        QVERIFY(agree.statesAgree());
        QVERIFY(!agree.stateRound());
        const auto parsed = groupFromJson(parseServiceMessage(encodeServiceMessage("begin", groupToJson(agree))));
        QVERIFY(parsed.statesAgree());
        for (std::size_t i = 0; i < 3; ++i)
            QCOMPARE(parsed.members[i].stateDigest, digest);

        auto other = agree;
        other.members[1].stateDigest = digestOf({0.5f, -1.0000001f}); // one float differs
        QVERIFY(!other.statesAgree());
        QVERIFY(!groupFromJson(groupToJson(other)).statesAgree());

        auto without = agree;
        without.members[2].stateDigest.clear();
        QVERIFY(!without.statesAgree());
        QVERIFY(!groupFromJson(groupToJson(without)).statesAgree());

        auto repairing = agree;
        repairing.members[0].repair = true;
        QVERIFY(!repairing.statesAgree());
        QVERIFY(repairing.stateRound());

        QVERIFY(!groupOfOneState("").statesAgree()); // nobody sent one: periodic rounds as before
    }

    // A digest that is not 64 lowercase hex digits is refused, in a join and in a BEGIN.
    void malformedDigestsAreRefused()
    {
        const auto digest = digestOf({1.0f});
        for (const std::string &bad : {std::string("abc"), digest.substr(0, 63) + "G", std::string(65, 'a')}) {
            JoinRequest r{"run-1", 9, "s", peer(0).peerId(), "tcp://127.0.0.1:9", 1.0, false, true, peer(0).publicKey(),
                          false, 2, digest};
            auto j = joinToJson(r);
            j["d"] = bad;
            QVERIFY2(refusalOf([&] { (void)joinFromJson(j); }).contains(bad.size() > 64 ? "longer than 64" : "64 lowercase hex"),
                     qPrintable(refusalOf([&] { (void)joinFromJson(j); })));
            auto g = groupToJson(groupOfOneState(digest));
            g["m"][1]["d"] = bad;
            QVERIFY(refusalOf([&] { (void)groupFromJson(g); }) != QStringLiteral("<no exception>"));
        }
        auto j = joinToJson(JoinRequest{"run-1", 9, "s", peer(0).peerId(), "tcp://127.0.0.1:9", 1.0, false, true,
                                        peer(0).publicKey(), false, 2, digest});
        j["d"] = 7;
        QVERIFY(refusalOf([&] { (void)joinFromJson(j); }).contains("not a string"));
    }
};

QTEST_GUILESS_MAIN(TestStateDigests)
#include "tst_statedigests.moc"
