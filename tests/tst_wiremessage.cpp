// Shard message headers (core/net/WireMessage.h): round trip and every refusal.
#include "net/WireMessage.h"

#include <QtTest>

#include <nlohmann/json.hpp>

using namespace dedloc;

namespace {

ShardSchema schema() { return {"g1", 4, 1000, 256, Compression::Fp16}; }

ShardHeader valid()
{
    ShardHeader h;
    h.type = MessageType::Part;
    h.group = "g1";
    h.sender = 3;
    h.shard = 1;
    h.part = 2;
    h.parts = 4;
    h.offset = 512;
    h.count = 256;
    h.weight = 48.0;
    h.codec = Compression::Fp16;
    return h;
}

std::vector<std::uint8_t> mutated(const std::function<void(nlohmann::json &)> &change)
{
    auto j = nlohmann::json::from_cbor(encodeShardHeader(valid()));
    change(j);
    return nlohmann::json::to_cbor(j);
}

} // namespace

class TestWireMessage final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTrip()
    {
        const auto h = parseShardHeader(encodeShardHeader(valid()), schema());
        QCOMPARE(int(h.type), int(MessageType::Part));
        QCOMPARE(h.group, std::string("g1"));
        QCOMPARE(h.sender, 3U);
        QCOMPARE(h.shard, 1U);
        QCOMPARE(h.part, 2U);
        QCOMPARE(h.parts, 4U);
        QCOMPARE(h.offset, std::uint64_t{512});
        QCOMPARE(h.count, std::uint64_t{256});
        QCOMPARE(h.weight, 48.0);
        QCOMPARE(int(h.codec), int(Compression::Fp16));
        QVERIFY(encodeShardHeader(valid()).size() < 100);
        QCOMPARE(h.radius, -1.0); // absent: not clipped
        QCOMPARE(h.counted, -1.0);
    }

    // A RESULT of a round that checks results says its block's radius and what it counted for
    // its receiver.
    void checkedResultFieldsRoundTrip()
    {
        auto r = valid();
        r.type = MessageType::Result;
        r.radius = 2.5;
        r.counted = 0.0;
        const auto h = parseShardHeader(encodeShardHeader(r), schema());
        QCOMPARE(h.radius, 2.5);
        QCOMPARE(h.counted, 0.0);
        r.radius = 0.0; // clipped at radius 0: every sender sent the same values
        QCOMPARE(parseShardHeader(encodeShardHeader(r), schema()).radius, 0.0);
        r.counted = 31.0;
        QCOMPARE(parseShardHeader(encodeShardHeader(r), schema()).counted, 31.0);
    }

    void refusals_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("reason");
        const QStringList reasons = {
            "version", "type", "group", "sender", "shard", "parts", "part", "offset", "count",
            "outside", "weight", "codec", "unknown", "missing", "radius negative", "radius text", "counted negative", "radius huge", "counted huge",
        };
        for (int i = 0; i < reasons.size(); ++i)
            QTest::newRow(qPrintable(reasons[i])) << i << reasons[i];
    }

    void refusals()
    {
        QFETCH(int, which);
        const std::vector<std::function<void(nlohmann::json &)>> changes = {
            [](auto &j) { j["v"] = 2; },
            [](auto &j) { j["t"] = 7; },
            [](auto &j) { j["g"] = "another-group"; },
            [](auto &j) { j["s"] = 4; },               // only 4 members: 0..3
            [](auto &j) { j["h"] = -1; },              // negative: not an unsigned integer
            [](auto &j) { j["n"] = 0; },
            [](auto &j) { j["p"] = 4; },               // 4 parts: 0..3
            [](auto &j) { j["o"] = 1001; },            // shard holds 1000
            [](auto &j) { j["c"] = 257; },             // parts hold 256
            [](auto &j) { j["o"] = 900; },             // 900 + 256 > 1000
            [](auto &j) { j["w"] = -1.0; },
            [](auto &j) { j["z"] = "none"; },          // the group agreed on fp16
            [](auto &j) { j["x"] = 1; },
            [](auto &j) { j.erase("c"); },
            [](auto &j) { j["k"] = -1.0; },
            [](auto &j) { j["k"] = "2"; },
            [](auto &j) { j["u"] = -3.0; },
            [](auto &j) { j["k"] = 1e300; },           // its square overflows
            [](auto &j) { j["u"] = 1e300; },
        };
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseShardHeader(mutated(changes[static_cast<std::size_t>(which)]), schema()));
    }

    void garbageAndOversizedHeadersAreRefused()
    {
        const std::vector<std::uint8_t> garbage = {0xff, 0x00, 0x13};
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseShardHeader(garbage, schema()));
        const std::vector<std::uint8_t> notAMap = nlohmann::json::to_cbor(nlohmann::json::array({1, 2}));
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseShardHeader(notAMap, schema()));
        const std::vector<std::uint8_t> oversized(MaxShardHeaderBytes + 1, 0xa0);
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseShardHeader(oversized, schema()));
    }
};

QTEST_APPLESS_MAIN(TestWireMessage)
#include "tst_wiremessage.moc"
