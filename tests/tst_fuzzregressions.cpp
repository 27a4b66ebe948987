// The fuzz targets of bench/fuzz, replayed without libFuzzer: every input that once crashed a
// parser or made it throw an undocumented exception (tests/fuzz-regressions/<target>/), and every
// seed (bench/fuzz/corpus/<target>/). A target swallows only its parser's documented error type,
// so an exception that reaches this test is a failure, and a crash ends it.
#include "FuzzTargets.h"

#include <QTest>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

using namespace dedloc::fuzz;

namespace {

using Target = int (*)(const std::uint8_t *, std::size_t);

struct Named {
    const char *name;
    Target run;
};

const Named targets[] = {{"ShardHeader", fuzzShardHeader},           {"Payload", fuzzPayload},
                         {"ServiceMessage", fuzzServiceMessage},
                         {"UpdateHeader", fuzzUpdateHeader},         {"DhtPayload", fuzzDhtPayload},
                         {"DhtRecord", fuzzDhtRecord},               {"RunManifest", fuzzRunManifest},
                         {"AccessToken", fuzzAccessToken},           {"MinisignKey", fuzzMinisignKey},
                         {"MinisignSignature", fuzzMinisignSignature}, {"SealRelay", fuzzSealRelay},
                         {"MetricsRecord", fuzzMetricsRecord},       {"Checkpoint", fuzzCheckpoint}};

std::vector<std::uint8_t> readBytes(const std::filesystem::path &file)
{
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::filesystem::path> inputsOf(const char *target)
{
    std::vector<std::filesystem::path> files;
    for (const auto *root : {DEDLOC_FUZZ_REGRESSIONS, DEDLOC_FUZZ_CORPUS}) {
        const auto dir = std::filesystem::path(root) / target;
        if (std::filesystem::is_directory(dir))
            for (const auto &e : std::filesystem::directory_iterator(dir))
                if (e.is_regular_file())
                    files.push_back(e.path());
    }
    return files;
}

} // namespace

class TestFuzzRegressions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void replay_data()
    {
        QTest::addColumn<int>("target");
        QTest::addColumn<QString>("file");
        for (int i = 0; i < static_cast<int>(std::size(targets)); ++i)
            for (const auto &f : inputsOf(targets[i].name))
                QTest::newRow((std::string(targets[i].name) + "/" + f.filename().string()).c_str())
                    << i << QString::fromStdString(f.string());
    }

    // Each input passes through its target without an exception escaping (or a crash).
    void replay()
    {
        QFETCH(int, target);
        QFETCH(QString, file);
        const auto bytes = readBytes(file.toStdString());
        try {
            QCOMPARE(targets[target].run(bytes.data(), bytes.size()), 0);
        } catch (const std::exception &e) {
            QFAIL(qPrintable(QStringLiteral("undocumented exception: ") + QString::fromUtf8(e.what())));
        }
    }

    // Every target has seeds: a target whose corpus went missing would pass without testing.
    void everyTargetHasSeeds()
    {
        for (const auto &t : targets)
            QVERIFY2(!inputsOf(t.name).empty(), t.name);
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "tst_fuzzregressions.moc"
