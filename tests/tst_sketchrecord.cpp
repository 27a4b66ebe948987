// SketchRecord (core/averaging/SketchRecord.h): a round's sketches in their wire form, round trip
// (to nine significant digits) and every refusal, the check record around them, and its key.
#include "averaging/SketchRecord.h"
#include "net/WireMessage.h"

#include <QtTest>

#include <cmath>
#include <functional>
#include <set>

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

// Whether `a` and `b` agree to the nine significant digits the wire keeps.
bool near(double a, double b) { return std::abs(a - b) <= 1e-8 * std::abs(b); }

bool near(const ShardSketch &a, const ShardSketch &b)
{
    for (std::size_t k = 0; k < CheckProjections; ++k)
        if (!near(a.residual[k], b.residual[k]))
            return false;
    return a.shard == b.shard && near(a.spread, b.spread) && near(a.weight, b.weight) && near(a.maxWeight, b.maxWeight)
           && near(a.groupWeight, b.groupWeight) && near(a.radius, b.radius) && near(a.distance, b.distance)
           && near(a.slack, b.slack) && a.excluded == b.excluded && a.averaged == b.averaged && a.far == b.far;
}

bool near(const RoundSketches &a, const RoundSketches &b)
{
    if (a.own.size() != b.own.size() || a.view.size() != b.view.size())
        return false;
    for (std::size_t i = 0; i < a.own.size(); ++i)
        if (!near(a.own[i], b.own[i]))
            return false;
    for (std::size_t i = 0; i < a.view.size(); ++i)
        if (a.view[i].member != b.view[i].member || !near(a.view[i].sketch, b.view[i].sketch))
            return false;
    return true;
}

CheckRecord checkRecord()
{
    return {"peer", 70, "e70-0123456789abcdef", 4, std::string(64, 'a'), sample()};
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
        QVERIFY(near(parsed, expected));
        QVERIFY(parsed != expected); // thirds and tenths do not survive nine digits exactly
        QVERIFY(parseSketches(encodeSketches({}), 4).empty());
    }

    void numbersKeepNineSignificantDigits()
    {
        RoundSketches r;
        r.own = {sketch(0, 1.0)};
        r.own[0].residual[0] = 1.0 / 3.0;
        r.own[0].slack = 2.0e7 / 3.0;
        const auto text = encodeSketches(r).dump();
        QVERIFY2(text.find("0.333333333,") != std::string::npos, text.c_str());
        QVERIFY2(text.find("0.3333333333") == std::string::npos, text.c_str());
        QVERIFY2(text.find("6666666.67,") != std::string::npos, text.c_str());
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

    void checkRecordRoundTrip()
    {
        const auto r = checkRecord();
        const auto parsed = parseCheckRecord("signer", encodeCheckRecord(r));
        QCOMPARE(parsed.peerId, std::string("signer")); // the verified signer's, not the payload's
        QCOMPARE(parsed.epoch, r.epoch);
        QCOMPARE(parsed.groupId, r.groupId);
        QCOMPARE(parsed.members, r.members);
        QCOMPARE(parsed.digest, r.digest);
        QCOMPARE(parsed.sketches.own.size(), std::size_t{2});
        QCOMPARE(parsed.sketches.view.size(), std::size_t{3});
        auto empty = r; // a member that sketched nothing still reports
        empty.sketches = {};
        QVERIFY(parseCheckRecord("p", encodeCheckRecord(empty)).sketches.empty());
        auto partial = r; // an incomplete round's record: its view alone
        partial.sketches.own.clear();
        partial.partial = true;
        const auto back = parseCheckRecord("p", encodeCheckRecord(partial));
        QVERIFY(back.partial);
        QCOMPARE(back.sketches.view.size(), std::size_t{3});
        QVERIFY(!parseCheckRecord("p", encodeCheckRecord(r)).partial);
    }

    void checkRecordRefusals_data()
    {
        QTest::addColumn<int>("which");
        const char *names[] = {"not json", "an array", "unknown field", "no epoch", "negative epoch",
                               "no sketches", "group of one", "group too large to check", "empty group id",
                               "long group id", "short digest", "upper-case digest", "view beyond the group",
                               "bad sketches", "partial as text", "partial with own sketches"};
        for (int i = 0; i < 16; ++i)
            QTest::newRow(names[i]) << i;
    }
    void checkRecordRefusals()
    {
        QFETCH(int, which);
        const std::vector<std::function<void(json &)>> changes = {
            [](json &j) { j = "{"; },
            [](json &j) { j = json::array(); },
            [](json &j) { j["w"] = 3; },
            [](json &j) { j.erase("e"); },
            [](json &j) { j["e"] = -1; },
            [](json &j) { j.erase("c"); },
            [](json &j) { j["n"] = 1; },
            [](json &j) { j["n"] = MaxCheckedMembers + 1; },
            [](json &j) { j["g"] = ""; },
            [](json &j) { j["g"] = std::string(65, 'g'); },
            [](json &j) { j["h"] = std::string(63, 'a'); },
            [](json &j) { j["h"] = std::string(64, 'A'); },
            [](json &j) { j["n"] = 3; }, // the view names member 3
            [](json &j) { j["c"]["v"] = 1; },
            [](json &j) { j["p"] = "yes"; },
            [](json &j) { j["p"] = true; }, // its own sketches are not empty
        };
        auto j = json::parse(encodeCheckRecord(checkRecord()));
        changes[static_cast<std::size_t>(which)](j);
        const auto payload = which == 0 ? j.get<std::string>() : j.dump();
        QVERIFY_THROWS_EXCEPTION(ProtocolError, (void)parseCheckRecord("p", payload));
    }

    void checksKeyIsSharedByAGroupOnly()
    {
        const auto key = checksKey("run", 70, "e70-0123456789abcdef");
        QCOMPARE(checksKey("run", 70, "e70-0123456789abcdef"), key);
        QCOMPARE(checksKey("run", 70 + CheckKeyRing, "e70-0123456789abcdef"), key); // the ring
        QVERIFY(checksKey("run", 71, "e70-0123456789abcdef") != key);
        QVERIFY(checksKey("other run", 70, "e70-0123456789abcdef") != key);
        std::set<std::string> keys; // the group ids of one epoch spread over every slot, no more
        for (int g = 0; g < 400; ++g)
            keys.insert(checksKey("run", 70, "e70-" + std::to_string(g)));
        QCOMPARE(keys.size(), std::size_t{CheckKeySlots});
    }
};

QTEST_APPLESS_MAIN(TestSketchRecord)
#include "tst_sketchrecord.moc"
