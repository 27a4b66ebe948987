// SketchRecord (core/averaging/SketchRecord.h): a round's sketches in a group record's "c" field,
// round trip and every refusal, and through the group record itself.
#include "averaging/SketchRecord.h"
#include "averaging/SwarmMessages.h"

#include <QtTest>

#include <functional>

using namespace dedloc;
using json = nlohmann::json;

namespace {

ShardSketch sketch(std::uint32_t shard, double base)
{
    ShardSketch s;
    s.shard = shard;
    for (std::size_t k = 0; k < CheckProjections; ++k)
        s.residual[k] = base * (static_cast<double>(k) - 7.5) / 3.0; // negatives too
    s.spread = base;
    s.weight = 2 * base;
    s.maxWeight = base;
    s.groupWeight = 9 * base;
    s.radius = 0.25 * base;
    s.distance = 0.125 * base;
    s.slack = 1e7 * base;
    return s;
}

RoundSketches sample()
{
    RoundSketches r;
    r.own = {sketch(0, 1.5), sketch(2, 3.0)};
    r.own[1].excluded = 1;
    r.own[1].averaged = 2;
    r.own[1].far = {0, 3, 7};
    r.view = {{0, sketch(1, 0.1)}, {1, sketch(1, 0.2)}, {3, sketch(1, 0.3)}};
    return r;
}

} // namespace

class TestSketchRecord final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTrip()
    {
        auto expected = sample();
        const auto parsed = parseSketches(json::parse(encodeSketches(expected).dump()), 4);
        for (auto &v : expected.view)
            v.sketch.shard = 0; // a view's shard is its publisher's: not on the wire
        QCOMPARE(parsed, expected);
        QVERIFY(parseSketches(encodeSketches({}), 4).empty());
    }

    void refusals_data()
    {
        QTest::addColumn<int>("which");
        const char *names[] = {"not an object", "unknown field", "not a list", "too many",
                               "short entry", "index out of group", "index negative", "text value",
                               "negative sum", "named twice", "own without its counts", "far not increasing", "far as text"};
        for (int i = 0; i < 13; ++i)
            QTest::newRow(names[i]) << i;
    }
    void refusals()
    {
        QFETCH(int, which);
        const std::vector<std::function<void(json &)>> changes = {
            [](json &j) { j = json::array(); },
            [](json &j) { j["x"] = 1; },
            [](json &j) { j["v"] = 3; },
            [](json &j) { j["o"] = json::array(); for (std::size_t i = 0; i <= MaxCheckedMembers; ++i) j["o"].push_back(j["v"][0]); },
            [](json &j) { j["v"][0].erase(3); },
            [](json &j) { j["v"][0][0] = 4; },
            [](json &j) { j["v"][0][0] = -1; },
            [](json &j) { j["o"][0][5] = "1"; },
            [](json &j) { j["v"][1][CheckProjections + 2] = -1.0; },
            [](json &j) { j["v"][1][0] = 0; },
            [](json &j) { j["o"][0].erase(j["o"][0].size() - 1); },
            [](json &j) { j["o"][1].back() = json::array({3, 3}); },
            [](json &j) { j["o"][1].back() = "0 3 7"; },
        };
        auto j = encodeSketches(sample());
        changes[static_cast<std::size_t>(which)](j);
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseSketches(j, 4));
        // A projection may be negative; a sum may not (above).
        auto fine = encodeSketches(sample());
        fine["v"][0][1] = -5.0;
        QCOMPARE(parseSketches(fine, 4).view[0].sketch.residual[0], -5.0);
    }

    // Through the group record: kept with a digest, refused without one.
    void inAGroupRecord()
    {
        GroupRecord r;
        r.epoch = 7;
        r.groupId = "g";
        r.weight = 40;
        r.members = 4;
        r.digest = std::string(64, 'a');
        r.sketches = sample();
        SignedRecord signedRecord;
        signedRecord.peerId = "p";
        signedRecord.payload = encodeGroupRecord(r);
        const auto parsed = parseGroupRecord(signedRecord);
        QCOMPARE(parsed.sketches.own, r.sketches.own);
        QCOMPARE(parsed.sketches.view.size(), std::size_t{3});
        r.digest.clear(); // an announcement claims no average: no sketches either
        signedRecord.payload = encodeGroupRecord(r);
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseGroupRecord(signedRecord));
        r.digest = std::string(64, 'a');
        r.members = 3; // the view names member 3: the sketches are lost, the record is kept
        signedRecord.payload = encodeGroupRecord(r);
        const auto kept = parseGroupRecord(signedRecord);
        QVERIFY(kept.sketches.empty());
        QCOMPARE(kept.digest, r.digest);
    }
};

QTEST_APPLESS_MAIN(TestSketchRecord)
#include "tst_sketchrecord.moc"
