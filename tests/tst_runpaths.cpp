// Where things live on disk (run/RunPaths.h): the default run ($DEDLOC_RUN_DIR), the user's data
// directory, the run's data directories and the default downstream evaluation task (the
// manifest's, else the only task under <manifest dir>/eval/).
#include "run/RunPaths.h"

#include "run/RunManifest.h"
#include "ManifestFixtures.h"
#include "TestSupport.h"
#include "util/AtomicFile.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

namespace fs = std::filesystem;
using namespace dedloc;
using dedloc::test::EnvGuard;

class TestRunPaths : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void runDirectoriesNestUnderTheRunId()
    {
        QCOMPARE(runDataDir("/d", "bn-demo"), fs::path("/d/runs/bn-demo"));
        QCOMPARE(soloDataDir("/d", "bn-demo"), fs::path("/d/runs/bn-demo/solo"));
    }

    void defaultManifestHonoursRunDir()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const EnvGuard env("DEDLOC_RUN_DIR", tmp.path().toLocal8Bit());
        // An explicit directory without a manifest finds nothing rather than the bundled run.
        QVERIFY(!findDefaultManifest().has_value());
        const fs::path file = fs::path(tmp.path().toStdString()) / "manifest.json";
        writeFileAtomically(file, test::kValidManifest);
        QCOMPARE(findDefaultManifest(), std::optional<fs::path>(file));
    }

    void userDataDirHonoursEnvironment()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path root = tmp.path().toStdString();
        {
            const EnvGuard env("DEDLOC_DATA_DIR", QByteArray((root / "explicit" / "data").c_str()));
            const fs::path dir = userDataDir();
            QCOMPARE(dir, root / "explicit" / "data");
            QVERIFY(fs::is_directory(dir));
            // Holds the private identity key: nobody but the owner may read it.
            QCOMPARE(fs::status(dir).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
        }
        {
            const EnvGuard noExplicit("DEDLOC_DATA_DIR", std::nullopt);
            const EnvGuard xdg("XDG_DATA_HOME", QByteArray((root / "xdg").c_str()));
            QCOMPARE(userDataDir(), root / "xdg" / "dedloc");
            QVERIFY(fs::is_directory(root / "xdg" / "dedloc"));
        }
        {
            const EnvGuard noExplicit("DEDLOC_DATA_DIR", std::nullopt);
            const EnvGuard noXdg("XDG_DATA_HOME", std::nullopt);
            const EnvGuard home("HOME", QByteArray((root / "home").c_str()));
            QCOMPARE(userDataDir(), root / "home" / ".local" / "share" / "dedloc");
        }
    }

    void theOnlyTaskUnderEvalIsTheDefault()
    {
        QTemporaryDir tmp;
        RunManifest m;
        m.baseDir = tmp.path().toStdString();
        QVERIFY(!defaultEvaluationTask(m)); // no eval/ at all
        fs::create_directories(m.baseDir / "eval");
        std::ofstream(m.baseDir / "eval" / "README") << "a file is not a task";
        QVERIFY(!defaultEvaluationTask(m));
        fs::create_directories(m.baseDir / "eval" / "topics");
        QCOMPARE(defaultEvaluationTask(m).value(), m.baseDir / "eval" / "topics");
        fs::create_directories(m.baseDir / "eval" / "sentiment");
        QVERIFY(!defaultEvaluationTask(m)); // two tasks: the lead must choose
    }

    void theManifestsTaskWins()
    {
        QTemporaryDir tmp;
        RunManifest m;
        m.baseDir = tmp.path().toStdString();
        fs::create_directories(m.baseDir / "eval" / "topics");
        m.evaluation.task = "tasks/ner";
        m.evaluation.everyNSteps = 10;
        QCOMPARE(defaultEvaluationTask(m).value(), m.baseDir / "tasks" / "ner"); // even if not there (yet)
    }

    void theBundledRunShipsItsTask()
    {
        const auto m = loadRunManifest(test::defaultManifest());
        const auto task = defaultEvaluationTask(m);
        QVERIFY(task);
        QCOMPARE(task->filename(), fs::path("bn_sib200_topic"));
        QVERIFY(fs::is_regular_file(*task / "train.tsv"));
        QVERIFY(fs::is_regular_file(*task / "SOURCE.md"));
    }
};

QTEST_APPLESS_MAIN(TestRunPaths)
#include "tst_runpaths.moc"
