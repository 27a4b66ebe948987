// Relaying a seal (core/averaging/SealRelay.h): the relay frame and its refusals, which records
// a member relays, and asking a member's service socket (core/averaging/PeerService.h) for it:
// only values that verify as records under the epoch's key come back.
#include "averaging/PeerService.h"
#include "averaging/GroupSeal.h"
#include "averaging/SealRelay.h"
#include "net/PeerIdentity.h"
#include "net/WireMessage.h"
#include "util/Clock.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <atomic>

using namespace dedloc;

namespace {

const std::string Run = "relay-test";
const std::string Key = runKey(Run, "groups/7");

GroupRecord groupRecord(const std::string &peer, const std::string &group, long weight, const std::string &digest,
                        const std::string &signedValue)
{
    return {peer, {}, 7, group, weight, 2, digest, "tcp://127.0.0.1:9", {}, false, signedValue};
}

std::vector<std::uint8_t> cbor(const nlohmann::json &j) { return nlohmann::json::to_cbor(j); }

} // namespace

class TestSealRelay final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void frameRoundTripsAndBadOnesAreRefused()
    {
        const std::vector<std::string> values = {"abc", std::string(1000, '\0'), "z"};
        QCOMPARE(parseRelayedRecords(encodeRelayedRecords(values)), values);
        QVERIFY(parseRelayedRecords(encodeRelayedRecords({})).empty());
        const auto bin = [](std::size_t n) { return nlohmann::json::binary(std::vector<std::uint8_t>(n, 1)); };
        const auto refusedFrames = {
            cbor(nlohmann::json::object()),                                 // not an array
            cbor(nlohmann::json::array({"text"})),                          // not bytes
            cbor(nlohmann::json::array({bin(0)})),                          // an empty value
            cbor(nlohmann::json::array({bin(MaxRelayedValueBytes + 1)})),   // a value too large
            cbor(nlohmann::json::array({nlohmann::json::array({bin(1)})})), // nested
            std::vector<std::uint8_t>{0x9f, 0x41},                          // truncated
        };
        for (const auto &frame : refusedFrames)
            QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseRelayedRecords(frame));
        auto many = nlohmann::json::array();
        for (std::size_t i = 0; i <= MaxRelayedRecords; ++i)
            many.push_back(bin(1));
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseRelayedRecords(cbor(many)));
        many.erase(many.begin());
        QCOMPARE(parseRelayedRecords(cbor(many)).size(), MaxRelayedRecords);
    }

    // The seal's own record, then per named group the records claiming exactly its average (at
    // most RelayedRecordsPerGroup), never one without a signed value or of another claim.
    void aMemberRelaysTheRecordsTheSealRestsOn()
    {
        const auto h1 = std::string(64, '1'), h2 = std::string(64, '2');
        auto seal = groupRecord("s", "e7-a", 10, h1, "seal-bytes");
        seal.seal = {{"e7-a", 10, h1}, {"e7-b", 6, h2}};
        RecordBook book = {{"s", seal}};
        for (int i = 0; i < 6; ++i) {
            std::string peer = "a", value = "A";
            peer += std::to_string(i);
            value += std::to_string(i);
            book.emplace(peer, groupRecord(peer, "e7-a", 10, h1, value));
        }
        book.emplace("b0", groupRecord("b0", "e7-b", 6, h2, "B0"));
        book.emplace("b1", groupRecord("b1", "e7-b", 6, h2, ""));        // built here, never signed
        book.emplace("b2", groupRecord("b2", "e7-b", 7, h2, "B2-other")); // another claim
        book.emplace("c0", groupRecord("c0", "e7-c", 6, h2, "C0"));       // a group the seal leaves out
        const std::vector<std::string> expected = {"seal-bytes", "A0", "A1", "A2", "A3", "B0"};
        QCOMPARE(sealRelayValues(seal, book), expected);
    }

    // A member's relay comes back as the records that verify under the epoch's key: a tampered
    // value and one signed under another key are dropped; another epoch is refused.
    void askingAMemberReturnsOnlyRecordsThatVerify()
    {
        const auto identity = PeerIdentity::generate();
        DhtNode signer(identity);
        const double now = unixNow();
        const auto good = signer.encodeRecord(Key, "{\"x\":1}", 1, now, now + 60.0);
        auto tampered = good;
        tampered[tampered.size() / 2] = static_cast<char>(tampered[tampered.size() / 2] ^ 0x20);
        const auto otherKey = signer.encodeRecord(runKey(Run, "groups/8"), "{\"x\":1}", 1, now, now + 60.0);
        const auto expired = signer.encodeRecord(Key, "{\"x\":2}", 2, now - 100.0, now - 1.0);
        PeerService service(Run);
        service.addSealRelay(7, {good, tampered, otherKey, expired});
        GroupRecord member = groupRecord(identity.peerId(), "e7-a", 1, std::string(64, '1'), {});
        member.serviceEndpoint = service.endpoint();
        std::atomic<bool> stop{false};
        std::string why;
        const auto records = askForSeal(member, Run, 7, Key, 2.0, 3.0, stop, nullptr, &why);
        QCOMPARE(records.size(), std::size_t{1});
        QCOMPARE(records[0].peerId, identity.peerId());
        QCOMPARE(records[0].payload, std::string("{\"x\":1}"));
        QCOMPARE(records[0].value, good);
        QCOMPARE(service.served("seal?"), 1LL);
        why.clear();
        QVERIFY(askForSeal(member, Run, 6, Key, 2.0, 3.0, stop, nullptr, &why).empty());
        QCOMPARE(why, std::string("no seal taken at that epoch"));
        QVERIFY(askForSeal(member, "another-run", 7, Key, 2.0, 3.0, stop, nullptr, &why).empty());
        // Only the four newest epochs are kept.
        for (long e = 8; e < 12; ++e)
            service.addSealRelay(e, {good});
        QVERIFY(askForSeal(member, Run, 7, Key, 2.0, 3.0, stop, nullptr, &why).empty());
        // Nobody at the endpoint: nothing, after the timeout, with the reason.
        member.serviceEndpoint = "tcp://127.0.0.1:1";
        QVERIFY(askForSeal(member, Run, 11, Key, 0.3, 3.0, stop, nullptr, &why).empty());
        QCOMPARE(why, std::string("no answer"));
    }
};

QTEST_GUILESS_MAIN(TestSealRelay)
#include "tst_sealrelay.moc"
