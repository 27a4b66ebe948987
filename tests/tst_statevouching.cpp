// Whether the swarm's signed progress records vouch for a donor's state
// (core/averaging/StateVouching.h), and the record fields it reads ("se", "sh"), which must
// round trip and refuse what is not a SHA-256 digest.
#include "averaging/StateVouching.h"
#include "net/WireMessage.h"
#include "util/Hash.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <functional>
#include <utility>

using namespace dedloc;

namespace {

std::string digestOf(const std::string &text) { return sha256Hex(text.data(), text.size()); }

ProgressRecord holder(const std::string &peer, long epoch, const std::string &state,
                      PeerRole role = PeerRole::Trainer)
{
    ProgressRecord r;
    r.peerId = peer;
    r.epoch = epoch;
    r.role = role;
    r.stateEpoch = epoch;
    r.stateDigest = digestOf(state);
    return r;
}

SignedRecord signedBy(const std::string &payload) { return {"p", {}, 1, 1000.0, 1060.0, payload, {}}; }

} // namespace

class TestStateVouching final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Two trainers of one group at epoch 7 hold the same state; a stranger claims epoch 7 (or 8)
    // with another. The honest state is vouched for by two; the stranger's by itself only.
    void aStateTwoRecordsClaimIsVouchedFor()
    {
        const std::vector<ProgressRecord> live{holder("a", 7, "honest"), holder("b", 7, "honest"),
                                               holder("evil", 8, "garbage"), holder("me", 0, "fresh")};
        QCOMPARE(whyStateNotVouched(live, "me", "a", 7, digestOf("honest")), std::string());
        QCOMPARE(whyStateNotVouched(live, "me", "b", 7, digestOf("honest")), std::string());
        const auto why = whyStateNotVouched(live, "me", "evil", 8, digestOf("garbage"));
        QVERIFY2(why.find("state of epoch 8 (" + digestOf("garbage").substr(0, 8) + "...) is claimed by 1 peer(s); 2 needed")
                     == 0,
                 why.c_str());
        // The stranger offering the honest state's digest at another epoch, or another digest
        // at the honest epoch, is not vouched for either.
        QVERIFY(!whyStateNotVouched(live, "me", "evil", 8, digestOf("honest")).empty());
        QVERIFY(!whyStateNotVouched(live, "me", "evil", 7, digestOf("garbage")).empty());
        // A donor offering what its own record does not claim (it stepped since, or lies): the
        // others' claims still count, and the reason says its record differs.
        const auto notOwn = whyStateNotVouched(live, "me", "evil", 7, digestOf("other"));
        QVERIFY2(notOwn.find("not by the donor's own record") != std::string::npos, notOwn.c_str());
        // The joiner's own record never vouches: "me" claiming "garbage" at 8 adds nothing.
        auto withMe = live;
        withMe.back() = holder("me", 8, "garbage");
        QVERIFY(!whyStateNotVouched(withMe, "me", "evil", 8, digestOf("garbage")).empty());
        // The threshold is a parameter: with 3 needed, the two honest claims are not enough.
        QVERIFY(!whyStateNotVouched(live, "me", "a", 7, digestOf("honest"), 3).empty());
    }

    // A swarm of one trainer (beside a monitor whose state lags) has nobody to agree with: its
    // own claim is enough. With a second trainer that disagrees it is not.
    void aLoneTrainerVouchesForItself()
    {
        std::vector<ProgressRecord> live{holder("t", 9, "state9"), holder("m", 6, "state6", PeerRole::Monitor)};
        QCOMPARE(whyStateNotVouched(live, "me", "t", 9, digestOf("state9")), std::string());
        QVERIFY(!whyStateNotVouched(live, "me", "t", 9, digestOf("other")).empty()); // not what it claims
        QVERIFY(!whyStateNotVouched(live, "me", "m", 6, digestOf("state6")).empty()); // a monitor is no trainer
        live.push_back(holder("u", 9, "forked"));
        QVERIFY(!whyStateNotVouched(live, "me", "t", 9, digestOf("state9")).empty());
        // Records without a state (client-mode peers, auxiliaries) count for nothing either way.
        ProgressRecord client;
        client.peerId = "c";
        client.epoch = 9;
        QVERIFY(!whyStateNotVouched({holder("t", 9, "state9"), holder("u", 9, "forked"), client}, "me", "t", 9,
                                    digestOf("state9"))
                     .empty());
        QCOMPARE(whyStateNotVouched({holder("t", 9, "state9"), client}, "me", "t", 9, digestOf("state9")),
                 std::string());
    }

    // The record's "se"/"sh" fields: written only with a digest, read back, and refused unless
    // "sh" is 64 lowercase hex digits with a non-negative "se".
    void recordFieldsRoundTripAndRefuseNonDigests()
    {
        ProgressRecord r = holder("a", 12, "x");
        const auto payload = encodeProgress(r);
        const auto back = parseProgress(signedBy(payload));
        QCOMPARE(back.stateEpoch, 12L);
        QCOMPARE(back.stateDigest, digestOf("x"));
        ProgressRecord none;
        QVERIFY(!nlohmann::json::parse(encodeProgress(none)).contains("sh"));
        // A monitor's followed epoch ("f"), sent only above its own epoch.
        QVERIFY(!nlohmann::json::parse(encodeProgress(none)).contains("f"));
        ProgressRecord monitor = holder("m", 3, "x");
        monitor.followedEpoch = 7;
        QCOMPARE(parseProgress(signedBy(encodeProgress(monitor))).followedEpoch, 7L);
        QCOMPARE(parseProgress(signedBy(encodeProgress(none))).followedEpoch, 0L);
        QCOMPARE(parseProgress(signedBy(encodeProgress(none))).stateEpoch, -1L);
        for (const auto &[name, change] : std::vector<std::pair<const char *, std::function<void(nlohmann::json &)>>>{
                 {"short", [](nlohmann::json &j) { j["sh"] = j["sh"].get<std::string>().substr(1); }},
                 {"upper case", [](nlohmann::json &j) { j["sh"] = std::string(64, 'A'); }},
                 {"not hex", [](nlohmann::json &j) { j["sh"] = std::string(64, 'g'); }},
                 {"too long", [](nlohmann::json &j) { j["sh"] = std::string(65, 'a'); }},
                 {"not text", [](nlohmann::json &j) { j["sh"] = 5; }},
                 {"no epoch", [](nlohmann::json &j) { j.erase("se"); }},
                 {"negative epoch", [](nlohmann::json &j) { j["se"] = -1; }},
             }) {
            auto j = nlohmann::json::parse(payload);
            change(j);
            bool refused = false;
            try {
                (void)parseProgress(signedBy(j.dump()));
            } catch (const ProtocolError &) {
                refused = true;
            }
            QVERIFY2(refused, name);
        }
    }
};

QTEST_APPLESS_MAIN(TestStateVouching)
#include "tst_statevouching.moc"
