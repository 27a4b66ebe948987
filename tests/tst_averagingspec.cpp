// The run manifest's "averaging" section (run/RunManifest.h AveragingSpec): the two modes, their
// fields and what is refused, the canonical form written back (only when the section is there).
#include "ManifestFixtures.h"

#include "run/RunManifest.h"

#include <QtTest>

#include <nlohmann/json.hpp>

using dedloc::AveragingMode;
using dedloc::test::edited;
using dedloc::test::parseError;
using nlohmann::json;

namespace {

dedloc::RunManifest withAveraging(const char *section)
{
    return dedloc::parseRunManifest(edited(QStringLiteral("set"), QStringLiteral("/averaging"),
                                           QString::fromUtf8(section)),
                                    {});
}

} // namespace

class TestAveragingSpec final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void absentMeansGradientsAtOnce()
    {
        const auto m = dedloc::parseRunManifest(edited(QStringLiteral("set"), QStringLiteral("/name"),
                                                       QStringLiteral("\"n\"")),
                                                {});
        QVERIFY(!m.averagingField);
        QVERIFY(m.averaging().mode == AveragingMode::Gradients);
        QVERIFY(!m.averaging().delayedParameterUpdates);
        // Written only when set: manifests signed before the section existed keep their bytes.
        QVERIFY(!json::parse(dedloc::toJson(m)).contains("averaging"));
    }

    void delayedUpdates()
    {
        const auto m = withAveraging(R"({"delayed_parameter_updates": true})");
        QVERIFY(m.averaging().delayedParameterUpdates);
        QVERIFY(m.averaging().mode == AveragingMode::Gradients);
        QCOMPARE(json::parse(dedloc::toJson(m)).at("averaging"), json::parse(R"({"delayed_parameter_updates": true})"));
        // An empty section is today's mode, written back in full.
        QCOMPARE(json::parse(dedloc::toJson(withAveraging("{}"))).at("averaging"),
                 json::parse(R"({"delayed_parameter_updates": false})"));
    }

    void localUpdatesWithDiLoCoDefaults()
    {
        const auto m = withAveraging(R"({"mode": "local_updates", "inner_batch_size": 32})");
        const auto a = m.averaging();
        QVERIFY(a.mode == AveragingMode::LocalUpdates);
        QCOMPARE(a.innerBatchSize, 32);
        QCOMPARE(a.outerLearningRate, 0.7);
        QCOMPARE(a.outerMomentum, 0.9);
        QVERIFY(!a.delayedParameterUpdates);
        const auto written = json::parse(dedloc::toJson(m)).at("averaging");
        QCOMPARE(written, json::parse(R"({"mode": "local_updates", "inner_batch_size": 32,
                                          "outer_learning_rate": 0.7, "outer_momentum": 0.9})"));
        // The canonical form parses to the same spec.
        const auto again = dedloc::parseRunManifest(dedloc::toJson(m), {});
        QCOMPARE(again.averaging().innerBatchSize, 32);
        const auto custom = withAveraging(R"({"mode": "local_updates", "inner_batch_size": 256,
                                               "outer_learning_rate": 1, "outer_momentum": 0})");
        QCOMPARE(custom.averaging().innerBatchSize, 256); // the target batch size itself
        QCOMPARE(custom.averaging().outerLearningRate, 1.0);
        QCOMPARE(custom.averaging().outerMomentum, 0.0);
        // Overlapped outer steps: delayed updates in this mode, written only when set.
        const auto overlapped = withAveraging(R"({"mode": "local_updates", "inner_batch_size": 8,
                                                   "delayed_parameter_updates": true})");
        QVERIFY(overlapped.averaging().delayedParameterUpdates);
        QCOMPARE(json::parse(dedloc::toJson(overlapped)).at("averaging").value("delayed_parameter_updates", false), true);
    }

    void groupSize()
    {
        QCOMPARE(withAveraging("{}").averaging().groupSize, 64); // the default
        const auto m = withAveraging(R"({"group_size": 3})");
        QCOMPARE(m.averaging().groupSize, 3);
        QCOMPARE(json::parse(dedloc::toJson(m)).at("averaging"),
                 json::parse(R"({"delayed_parameter_updates": false, "group_size": 3})"));
        const auto local = withAveraging(R"({"mode": "local_updates", "inner_batch_size": 8, "group_size": 256})");
        QCOMPARE(local.averaging().groupSize, 256);
        QCOMPARE(dedloc::parseRunManifest(dedloc::toJson(local), {}).averaging().groupSize, 256);
    }

    void refused_data()
    {
        QTest::addColumn<QString>("section");
        QTest::addColumn<QString>("expected");
        const auto row = [](const char *name, const char *section, const char *expected) {
            QTest::newRow(name) << QString::fromUtf8(section) << QString::fromUtf8(expected);
        };
        row("delayed as a string", R"({"delayed_parameter_updates": "yes"})",
            "averaging.delayed_parameter_updates: expected");
        row("unknown mode", R"({"mode": "diloco"})",
            "averaging.mode: expected \"gradients\" or \"local_updates\", got \"diloco\"");
        row("unknown field", R"({"mode": "gradients", "h": 500})", "averaging: unknown field \"h\"");
        row("local without inner batch", R"({"mode": "local_updates"})", "averaging.inner_batch_size: missing");
        row("inner batch 0", R"({"mode": "local_updates", "inner_batch_size": 0})",
            "averaging.inner_batch_size: expected a positive");
        row("inner batch above target", R"({"mode": "local_updates", "inner_batch_size": 257})",
            "averaging.inner_batch_size: is 257, more than training.target_batch_size 256");
        row("outer rate in gradients mode", R"({"outer_learning_rate": 0.7})",
            "averaging.outer_learning_rate: applies to \"mode\": \"local_updates\" only");
        row("outer rate 0", R"({"mode": "local_updates", "inner_batch_size": 8, "outer_learning_rate": 0})",
            "averaging.outer_learning_rate: expected a number");
        row("outer momentum 1", R"({"mode": "local_updates", "inner_batch_size": 8, "outer_momentum": 1})",
            "averaging.outer_momentum: expected a number");
        row("group of one", R"({"group_size": 1})", "averaging.group_size: is 1, expected 2 to 256");
        row("group of 257", R"({"group_size": 257})", "averaging.group_size: is 257, expected 2 to 256");
        row("group size as text", R"({"group_size": "8"})", "averaging.group_size: expected");
    }

    void refused()
    {
        QFETCH(QString, section);
        QFETCH(QString, expected);
        const auto message = parseError(edited(QStringLiteral("set"), QStringLiteral("/averaging"), section));
        QVERIFY2(message.has_value(), "the invalid section was accepted");
        QVERIFY2(message->startsWith(expected), qPrintable(QStringLiteral("got: ") + *message));
    }
};

QTEST_GUILESS_MAIN(TestAveragingSpec)
#include "tst_averagingspec.moc"
