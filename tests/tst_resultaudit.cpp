// ResultAudit (core/averaging/ResultAudit.h): the reducers of a group judged from the members'
// check records, after a real all-reduce round on loopback that checked results. The records go
// through their wire form (encodeCheckRecord, parseCheckRecord) as a reader gets them.
#include "AllReduceSwarm.h"
#include "averaging/ResultAudit.h"
#include "util/Hash.h"

#include <QtTest>

#include <algorithm>

using namespace dedloc;
using namespace dedloc::test;

namespace {

constexpr std::size_t Members = 4;
constexpr std::size_t Elements = Members * (128 * 1024 + 3000);

AllReduceOptions checked() { return checkedRoundOptions(); }

std::string digestOf(const std::string &text) { return sha256Hex(text.data(), text.size()); }

GroupInfo groupOf(const Swarm &s) { return {"group-1", 5, s.members}; }

// Member i's record as a reader parses it: sketched under `digest`.
CheckRecord recordOf(const Swarm &s, std::size_t i, const std::string &digest)
{
    const CheckRecord r{{}, 5, "group-1", Members, digest, s.reports[i].evidence->sketch(digest)};
    return parseCheckRecord(s.members[i].peerId, encodeCheckRecord(r));
}

std::vector<CheckRecord> recordsOf(const Swarm &s, const std::string &digest)
{
    std::vector<CheckRecord> records;
    for (std::size_t i = 0; i < Members; ++i)
        records.push_back(recordOf(s, i, digest));
    return records;
}

Swarm roundWith(const std::vector<AllReduceOptions> &options)
{
    Swarm s(std::vector<bool>(Members, true), {10.0, 20.0, 30.0, 40.0}, Elements);
    const auto common = randomVector(Elements, 7);
    for (auto &v : s.values)
        for (std::size_t k = 0; k < Elements; ++k)
            v[k] += 2.0F * common[k];
    s.run(options, {0, 1, 2, 3});
    return s;
}

} // namespace

class TestResultAudit final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void honestReducersHold()
    {
        const auto s = roundWith(std::vector<AllReduceOptions>(Members, checked()));
        const auto verdicts = auditGroup(groupOf(s), recordsOf(s, digestOf("a")), 2.0);
        QCOMPARE(verdicts.size(), Members);
        for (std::size_t j = 0; j < Members; ++j) {
            QCOMPARE(verdicts[j].reducer, j);
            QVERIFY2(verdicts[j].check.outcome == CheckOutcome::Holds, verdicts[j].check.reason.c_str());
        }
    }

    void aReducerThatMovedItsResultFailsAlone()
    {
        auto options = std::vector<AllReduceOptions>(Members, checked());
        options[1].tamperAverage = [](std::span<float> v) {
            for (auto &x : v)
                x += 0.5F;
        };
        const auto s = roundWith(options);
        const auto verdicts = auditGroup(groupOf(s), recordsOf(s, digestOf("b")), 2.0);
        QCOMPARE(verdicts.size(), Members);
        for (const auto &v : verdicts)
            QVERIFY2((v.check.outcome == CheckOutcome::Fails) == (v.reducer == 1), v.check.reason.c_str());
    }

    // Records of other groups, epochs or group sizes, or of strangers, are not read as the
    // group's; a reducer whose record is missing is not judged (silent); members whose record
    // claims another digest are not compared with it.
    void onlyTheRoundsOwnRecordsCount()
    {
        const auto s = roundWith(std::vector<AllReduceOptions>(Members, checked()));
        const auto digest = digestOf("c");
        auto records = recordsOf(s, digest);
        records.erase(records.begin() + 2); // member 2's record not read (yet)
        auto stranger = recordOf(s, 3, digest);
        stranger.peerId = "stranger";
        stranger.sketches.own[0].residual[0] += 1e9;
        auto otherGroup = recordOf(s, 0, digest);
        otherGroup.groupId = "group-2";
        otherGroup.sketches.view.clear();
        records.push_back(stranger);
        records.push_back(otherGroup);
        auto verdicts = auditGroup(groupOf(s), records, 2.0);
        QCOMPARE(verdicts.size(), Members);
        for (const auto &v : verdicts) { // member 2 is not judged: silent (its shard counted the others)
            QCOMPARE(v.silent, v.reducer == 2);
            QCOMPARE(v.check.outcome, v.reducer == 2 ? CheckOutcome::Undecided : CheckOutcome::Holds);
        }
        // A record of another group size is not the round's either: its signer is not judged.
        records = recordsOf(s, digest);
        records[1].members = Members + 1;
        verdicts = auditGroup(groupOf(s), records, 2.0);
        QCOMPARE(verdicts.size(), Members);
        QVERIFY(verdicts[1].silent);
        // Member 3 claims another average than the three others: as a reducer it fails; its own
        // sketches (under another seed) dispute nobody.
        records = recordsOf(s, digest);
        records[3] = recordOf(s, 3, digestOf("another"));
        verdicts = auditGroup(groupOf(s), records, 2.0);
        QCOMPARE(verdicts.size(), Members);
        for (const auto &v : verdicts)
            QVERIFY2((v.check.outcome == CheckOutcome::Fails) == (v.reducer == 3), v.check.reason.c_str());
        QVERIFY(verdicts[3].check.reason.find("another average") != std::string::npos);
        // Two against two: no average the group agrees on, no verdict at all.
        records[2] = recordOf(s, 2, digestOf("another"));
        QVERIFY(auditGroup(groupOf(s), records, 2.0).empty());
    }

    // A reducer whose record is missing while most other senders were counted in its shard is
    // named silent (its view would have judged it); named by one sender's word alone, it is not.
    void aReducerWithoutARecordIsNamedSilent()
    {
        const auto s = roundWith(std::vector<AllReduceOptions>(Members, checked()));
        auto records = recordsOf(s, digestOf("f"));
        records.erase(records.begin() + 1);
        auto verdicts = auditGroup(groupOf(s), records, 2.0);
        QCOMPARE(verdicts.size(), Members);
        for (const auto &v : verdicts) {
            QCOMPARE(v.silent, v.reducer == 1);
            QCOMPARE(v.check.outcome, v.reducer == 1 ? CheckOutcome::Undecided : CheckOutcome::Holds);
        }
        for (std::size_t i : {1, 2}) // members 2 and 3 say nothing of shard 1: only member 0 does
            std::erase_if(records[i].sketches.own, [](const ShardSketch &o) { return o.shard == 1; });
        verdicts = auditGroup(groupOf(s), records, 2.0);
        QVERIFY(std::none_of(verdicts.begin(), verdicts.end(), [](const AuditVerdict &v) { return v.silent; }));
    }

    // A partial record (its member's round was incomplete) holds its view alone: it disputes no
    // other reducer (its missing own sketches are not "not counted"), and its view is judged.
    void aPartialRecordReportsOnItsOwnShardOnly()
    {
        const auto s = roundWith(std::vector<AllReduceOptions>(Members, checked()));
        auto records = recordsOf(s, digestOf("g"));
        records[2].sketches.own.clear();
        records[2].partial = true;
        records[2] = parseCheckRecord(records[2].peerId, encodeCheckRecord(records[2]));
        const auto verdicts = auditGroup(groupOf(s), records, 2.0);
        QCOMPARE(verdicts.size(), Members);
        for (const auto &v : verdicts)
            QVERIFY2(v.check.outcome == CheckOutcome::Holds, v.check.reason.c_str());
        records[2].partial = false; // the same record, not partial: "not counted" by every reducer
        for (const auto &v : auditGroup(groupOf(s), records, 2.0))
            QVERIFY(v.reducer == 2 || !v.check.disputes.empty());
    }

    // A view counting a member that sent no values (weight 0 in the BEGIN: nothing of its own can
    // dispute it) fails; so does one whose member's record says it was not counted.
    void aViewCountingWhoCannotDisputeFails()
    {
        auto s = roundWith(std::vector<AllReduceOptions>(Members, checked()));
        auto records = recordsOf(s, digestOf("e"));
        auto group = groupOf(s);
        group.members[2].weight = 0.0;
        auto verdicts = auditGroup(group, records, 2.0);
        QCOMPARE(verdicts[1].check.outcome, CheckOutcome::Fails);
        QVERIFY(verdicts[1].check.reason.find("sent no values") != std::string::npos);
        records = recordsOf(s, digestOf("e"));
        for (auto *r : {&records[2], &records[3]})
            std::erase_if(r->sketches.own, [](const ShardSketch &o) { return o.shard == 0; });
        verdicts = auditGroup(groupOf(s), records, 2.0);
        QCOMPARE(verdicts[0].check.outcome, CheckOutcome::Fails);
        QCOMPARE(verdicts[0].check.disputes, (std::vector<std::size_t>{2, 3}));
    }

    // One member publishing a false own sketch: a lone dispute with each reducer, never a failure.
    void aLyingMemberOnlyDisputes()
    {
        const auto s = roundWith(std::vector<AllReduceOptions>(Members, checked()));
        auto records = recordsOf(s, digestOf("d"));
        for (auto &own : records[0].sketches.own)
            own.residual[3] *= -1.0;
        const auto verdicts = auditGroup(groupOf(s), records, 2.0);
        for (const auto &v : verdicts) {
            if (v.reducer == 0) {
                QCOMPARE(v.check.outcome, CheckOutcome::Holds);
                continue;
            }
            QCOMPARE(v.check.outcome, CheckOutcome::Disputed);
            QCOMPARE(v.check.disputes, std::vector<std::size_t>{0});
        }
    }
};

QTEST_GUILESS_MAIN(TestResultAudit)
#include "tst_resultaudit.moc"
