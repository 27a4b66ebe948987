// The monitor's kept checkpoints (monitor/CheckpointArchive.h): one file per epoch, the oldest
// removed beyond the limit, copies unaffected when the store replaces its newest file, other
// files left alone, and an unwritable archive reported as an error.
#include "monitor/CheckpointArchive.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

namespace fs = std::filesystem;
using dedloc::test::errorOf;

class TestCheckpointArchive : public QObject {
    Q_OBJECT
  private Q_SLOTS:
    void keepsTheNewestAndRemovesTheOldest()
    {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const auto newest = root / "run" / "checkpoint.ddlc";
        fs::create_directories(newest.parent_path());
        dedloc::CheckpointArchive archive(root / "kept", 3);
        for (long epoch = 1; epoch <= 7; ++epoch) {
            // The store's way: write elsewhere, rename into place (never rewrite in place).
            dedloc::writeFileAtomically(newest, "state of epoch " + std::to_string(epoch));
            const auto kept = archive.add(newest, epoch * 5);
            QCOMPARE(kept, root / "kept" / dedloc::CheckpointArchive::fileName(epoch * 5));
        }
        std::ofstream(root / "kept" / "notes.txt") << "the lead's notes";
        std::ofstream(root / "kept" / "epoch-12.ddlc.tmp-99") << "half a copy";
        const auto list = archive.list();
        QCOMPARE(list.size(), std::size_t(3));
        QCOMPARE(list[0].epoch, 25L);
        QCOMPARE(list[1].epoch, 30L);
        QCOMPARE(list[2].epoch, 35L);
        // Each kept copy holds its own epoch's state, although the newest file was replaced since.
        QCOMPARE(dedloc::readWholeFile(list[0].file), std::string("state of epoch 5"));
        QCOMPARE(dedloc::readWholeFile(list[2].file), std::string("state of epoch 7"));
        QCOMPARE(list[2].bytes, std::uintmax_t(16));
        QVERIFY(list[2].modified > 1.6e9); // a Unix time, not a file-clock count
        QVERIFY(!fs::exists(root / "kept" / dedloc::CheckpointArchive::fileName(20)));
        QVERIFY(fs::exists(root / "kept" / "notes.txt"));
        QCOMPARE(dedloc::CheckpointArchive::fileName(12).string(), std::string("epoch-00000012.ddlc"));
    }

    void sameEpochReplacesItsCopy()
    {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        dedloc::writeFileAtomically(root / "a.ddlc", "first");
        dedloc::CheckpointArchive archive(root / "kept", 2);
        archive.add(root / "a.ddlc", 4);
        dedloc::writeFileAtomically(root / "a.ddlc", "second");
        archive.add(root / "a.ddlc", 4);
        QCOMPARE(archive.list().size(), std::size_t(1));
        QCOMPARE(dedloc::readWholeFile(archive.list()[0].file), std::string("second"));
    }

    void errorsNameTheFile()
    {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        std::ofstream(root / "plain") << "x";
        dedloc::writeFileAtomically(root / "a.ddlc", "state");
        dedloc::CheckpointArchive blocked(root / "plain" / "kept", 2);
        QVERIFY(errorOf([&] {
                    blocked.add(root / "a.ddlc", 1);
                }).contains(QStringLiteral("cannot create the checkpoint archive")));
        dedloc::CheckpointArchive archive(root / "kept", 2);
        QVERIFY(errorOf([&] { archive.add(root / "missing.ddlc", 1); }).contains(QStringLiteral("missing.ddlc")));
        QVERIFY(archive.list().empty()); // nothing half-made under a final name
        QVERIFY(dedloc::CheckpointArchive(root / "nowhere", 1).list().empty());
    }
};

QTEST_APPLESS_MAIN(TestCheckpointArchive)
#include "tst_checkpointarchive.moc"
