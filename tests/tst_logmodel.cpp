// LogModel (ui/LogModel.h): lines logged from many threads arrive on the GUI thread in order per
// thread, coalesced, bounded, with levels, and in the log file; the previous sink comes back.
#include "LogModel.h"

#include <QFile>
#include <QtTest>

#include <thread>
#include <vector>

using namespace dedloc;
using namespace dedloc::ui;

class TestLogModel final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void linesFromThreadsAreBoundedAndOrdered()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("logs/dedloc.log");
        int rowsInsertedEvents = 0;
        {
            LogModel model(nullptr, 1000);
            model.install(file);
            QCOMPARE(model.logFile(), file);
            connect(&model, &QAbstractItemModel::rowsInserted, this, [&] { ++rowsInsertedEvents; });
            std::vector<std::thread> threads;
            for (int t = 0; t < 4; ++t)
                threads.emplace_back([t] {
                    for (int i = 0; i < 500; ++i)
                        log::info(std::string("t").append(std::to_string(t)), std::to_string(i));
                });
            for (auto &t : threads)
                t.join();
            log::warning("main", "last");
            QTRY_COMPARE(model.rowCount(), 1000); // 2001 logged, newest 1000 kept
            QCOMPARE(model.index(999, LogModel::Message).data().toString(), QString("last"));
            QCOMPARE(model.index(999, LogModel::Level).data().toString(), QString("Warning"));
            QCOMPARE(model.index(999, 0).data(LogModel::LevelRole).toInt(), int(log::Level::Warning));
            // Per thread, messages stay in order.
            std::vector<int> lastSeen(4, -1);
            for (int r = 0; r < 999; ++r) {
                const int t = model.index(r, LogModel::Category).data().toString().mid(1).toInt();
                const int i = model.index(r, LogModel::Message).data().toInt();
                QVERIFY(i > lastSeen[std::size_t(t)]);
                lastSeen[std::size_t(t)] = i;
            }
            QVERIFY2(rowsInsertedEvents < 100, qPrintable(QString::number(rowsInsertedEvents))); // coalesced
        }
        // After the model is gone, logging must not reach it (no crash), and the file has everything.
        log::info("main", "after");
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto lines = f.readAll().split('\n');
        QCOMPARE(lines.size(), 2002); // 2001 lines + empty tail
        QVERIFY(lines[2000].endsWith("W main: last"));
    }

    void unwritableLogFileIsReported()
    {
        QTemporaryDir dir;
        QFile blocker(dir.filePath("file"));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        LogModel model;
        model.install(dir.filePath("file/sub/dedloc.log")); // a file where a directory should be
        QCOMPARE(model.logFile(), QString());
        QTRY_COMPARE(model.rowCount(), 1);
        QVERIFY(model.index(0, LogModel::Message).data().toString().contains("cannot write the log file"));
    }
};

QTEST_GUILESS_MAIN(TestLogModel)
#include "tst_logmodel.moc"
