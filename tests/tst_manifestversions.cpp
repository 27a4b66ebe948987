// Manifest versions (core/averaging/ManifestVersions.h) and the training fingerprint they carry
// (core/run/RunManifest.h trainingFingerprint): which edits of a manifest split the swarm, the
// record's checks, and how a peer counts and describes the peers on other versions.
#include "averaging/ManifestVersions.h"
#include "net/WireMessage.h"
#include "run/RunManifest.h"

#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <set>

using namespace dedloc;

namespace {

SignedRecord record(const std::string &peerId, const std::string &payload)
{
    SignedRecord r;
    r.peerId = peerId;
    r.payload = payload;
    return r;
}

} // namespace

class TestManifestVersions final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void theFingerprintIgnoresWhatNoPeerComputesWith()
    {
        QTemporaryDir dir;
        const auto base = test::tinyRun(dir.path().toStdString());
        const auto f = trainingFingerprint(base);
        QCOMPARE(f.size(), std::size_t{16});
        QCOMPARE(trainingFingerprint(base), f); // deterministic
        auto same = base;
        same.name = "another title";
        same.description = "a longer text";
        same.lead = "someone else";
        same.bootstrapPeers.push_back("203.0.113.7:31340");
        same.training.microBatchSize = base.training.microBatchSize + 1;
        same.training.validationEveryNSteps = base.training.validationEveryNSteps + 5;
        same.training.checkpointEveryNSteps = base.training.checkpointEveryNSteps + 5;
        QCOMPARE(trainingFingerprint(same), f);
        // Optional sections spelled out with the values an absent one stands for.
        auto spelled = base;
        spelled.aggregationField = base.aggregation();
        spelled.averagingField = base.averaging();
        QCOMPARE(trainingFingerprint(spelled), f);
    }

    void theFingerprintChangesWithTheTraining()
    {
        QTemporaryDir dir;
        const auto base = test::tinyRun(dir.path().toStdString());
        const auto f = trainingFingerprint(base);
        std::vector<RunManifest> edits(5, base);
        edits[0].training.targetBatchSize *= 2;
        edits[1].optimizer.learningRate *= 0.5;
        edits[2].schedule.totalSteps += 1000;
        edits[3].model.numLayers += 1;
        edits[4].compression = base.compression == Compression::Fp16 ? Compression::Uniform8Bit : Compression::Fp16;
        std::set<std::string> seen{f};
        for (const auto &e : edits)
            QVERIFY(seen.insert(trainingFingerprint(e)).second);
    }

    void aRecordRoundTripsAndBadOnesAreRefused()
    {
        const auto v = parseVersionRecord(record("p1", encodeVersionRecord("0123456789abcdef", 42)));
        QCOMPARE(v.peerId, std::string("p1"));
        QCOMPARE(v.fingerprint, std::string("0123456789abcdef"));
        QCOMPARE(v.epoch, 42L);
        for (const char *bad : {"", "[]", "{\"m\":\"0123456789abcdef\"}", "{\"e\":1}",
                                "{\"m\":\"0123456789ABCDEF\",\"e\":1}", "{\"m\":\"0123\",\"e\":1}",
                                "{\"m\":\"0123456789abcdef\",\"e\":-1}", "{\"m\":\"0123456789abcdef\",\"e\":1.5}",
                                "{\"m\":7,\"e\":1}", "{\"m\":\"0123456789abcdef\",\"e\":1099511627777}"}) {
            bool refused = false;
            try {
                (void)parseVersionRecord(record("p1", bad));
            } catch (const ProtocolError &) {
                refused = true;
            }
            QVERIFY2(refused, bad);
        }
    }

    void otherVersionsCountsDistinctPeersOnOtherFingerprints()
    {
        const std::string mine = "aaaaaaaaaaaaaaaa", newer = "bbbbbbbbbbbbbbbb", older = "cccccccccccccccc";
        const std::vector<SignedRecord> records{
            record("self", encodeVersionRecord(newer, 99)), // this peer's own: never counted
            record("p1", encodeVersionRecord(mine, 10)),    // the same version
            record("p2", encodeVersionRecord(newer, 12)),
            record("p2", encodeVersionRecord(newer, 13)), // two records of one peer: one peer
            record("p3", encodeVersionRecord(newer, 11)),
            record("p4", encodeVersionRecord(older, 3)),
            record("p5", "{\"m\":\"garbage\"}"), // skipped, not counted
        };
        const auto o = otherVersions(records, mine, "self");
        QCOMPARE(o.peers, std::size_t{3});
        QCOMPARE(o.byFingerprint.size(), std::size_t{2});
        QCOMPARE(o.byFingerprint.at(newer), std::size_t{2});
        QCOMPARE(o.byFingerprint.at(older), std::size_t{1});
        QCOMPARE(o.highestEpoch, 12L); // p2's first record was the one counted
        const auto line = describeOtherVersions(o, mine, 10);
        QVERIFY(line.find("3 peers") == 0);
        QVERIFY(line.find(newer + " (2)") != std::string::npos);
        QVERIFY(line.find("they report epoch 12") != std::string::npos);
        QVERIFY(describeOtherVersions(otherVersions({records[1]}, mine, "self"), mine, 10).empty());
    }

    void theFingerprintsKeptAreBounded()
    {
        std::vector<SignedRecord> records;
        for (int i = 0; i < 40; ++i) {
            char f[17];
            std::snprintf(f, sizeof f, "%016x", i + 1);
            records.push_back(record("p" + std::to_string(i), encodeVersionRecord(f, i)));
        }
        const auto o = otherVersions(records, "0000000000000000", "self");
        QCOMPARE(o.peers, std::size_t{40});
        QCOMPARE(o.byFingerprint.size(), OtherVersions::MaxFingerprints);
    }
};

QTEST_APPLESS_MAIN(TestManifestVersions)
#include "tst_manifestversions.moc"
