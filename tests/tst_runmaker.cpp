// Making a run (core/run/RunMaker.h), as `dedloc-lead make-run` does it.
#include "TestSupport.h"

#include "model/Tokenizer.h"
#include "run/RunMaker.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace dedloc;

class TestRunMaker final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void makesAVerifiableRun()
    {
        QTemporaryDir tmp;
        const std::filesystem::path dir = tmp.path().toStdString();
        const auto source = dir / "source" / "text.txt";
        std::filesystem::create_directories(source.parent_path());
        test::writeCorpusSample(source, 300000);
        writeFileAtomically(source.parent_path() / "SOURCE.md", "licence: public domain\n");

        MakeRunOptions o;
        o.corpus = {source};
        o.outputDir = dir / "run";
        o.runId = "made-in-test";
        o.name = "test";
        o.preset = "tiny";
        o.vocabSize = 600;
        o.targetBatchSize = 64;
        const auto m = makeRun(o);

        QCOMPARE(m.model.vocabSize, 600);
        QCOMPARE(m.model.hiddenSize, 128); // tiny preset
        QCOMPARE(m.corpus.files.size(), std::size_t{1});
        QCOMPARE(m.corpus.files[0].path, std::string("corpus/text.txt"));
        QCOMPARE(m.corpus.files[0].sha256, sha256File(source));
        // The corpus travels with its provenance; the manifest on disk parses and verifies.
        QVERIFY(std::filesystem::exists(o.outputDir / "corpus" / "SOURCE.md"));
        const auto loaded = loadRunManifest(o.outputDir / "manifest.json");
        QCOMPARE(loaded.runId, std::string("made-in-test"));
        QCOMPARE(loaded.training.targetBatchSize, 64);
        QVERIFY(!loaded.averagingField); // the default mode writes no section
        verifyRunFiles(loaded);
        const Tokenizer tokenizer(loaded.resolve(loaded.tokenizer.path));
        QCOMPARE(tokenizer.vocabSize(), 600);
        const std::string text = "আমার সোনার বাংলা";
        QCOMPARE(tokenizer.decode(tokenizer.encode(text)), text);

        // The lead's choice of delayed parameter updates lands in the manifest on disk.
        o.retrainTokenizer = false;
        o.delayedParameterUpdates = true;
        (void)makeRun(o);
        QVERIFY(loadRunManifest(o.outputDir / "manifest.json").averaging().delayedParameterUpdates);
        // Local updates, overlapped (delayed), with their outer step and the 8-bit codec.
        o.localUpdatesInnerBatch = 16;
        o.outerLearningRate = 0.5;
        o.compression = Compression::Uniform8Bit;
        (void)makeRun(o);
        const auto local = loadRunManifest(o.outputDir / "manifest.json");
        QVERIFY(local.averaging().mode == AveragingMode::LocalUpdates);
        QCOMPARE(local.averaging().innerBatchSize, 16);
        QCOMPARE(local.averaging().outerLearningRate, 0.5);
        QCOMPARE(local.averaging().outerMomentum, 0.9);
        QVERIFY(local.compression == Compression::Uniform8Bit);
        QVERIFY(local.averaging().delayedParameterUpdates);
        o.localUpdatesInnerBatch = 65; // above the target batch size
        QVERIFY(test::errorOf([&] { makeRun(o); }).contains(QStringLiteral("inner_batch_size")));
    }

    void badRequestsAreRefused()
    {
        QTemporaryDir tmp;
        const std::filesystem::path dir = tmp.path().toStdString();
        MakeRunOptions o;
        o.outputDir = dir / "run";
        o.runId = "refused-run";
        o.name = "refused run";
        QVERIFY(test::errorOf([&] { makeRun(o); }).contains(QStringLiteral("corpus")));
        o.corpus = {dir / "missing.txt"};
        QVERIFY(test::errorOf([&] { makeRun(o); }).contains(QStringLiteral("does not exist")));
        const auto source = dir / "text.txt";
        test::writeCorpusSample(source, 100000);
        o.corpus = {source};
        o.preset = "enormous";
        o.vocabSize = 500;
        const QString presetError = test::errorOf([&] { makeRun(o); });
        QVERIFY2(presetError.contains(QStringLiteral("preset")), qPrintable(presetError));
        o.preset = "tiny";
        o.runId = "bad id with spaces";
        const QString idError = test::errorOf([&] { makeRun(o); });
        QVERIFY2(idError.contains(QStringLiteral("run_id")), qPrintable(idError));
        QVERIFY(!std::filesystem::exists(o.outputDir / "manifest.json")); // nothing invalid written
    }
};

QTEST_APPLESS_MAIN(TestRunMaker)
#include "tst_runmaker.moc"
