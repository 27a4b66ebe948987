// The monitor's periodic downstream evaluation (peer/DownstreamMonitor.h) on the tiny preset and
// a few SIB-200 sentences: an offered checkpoint is evaluated in the background and recorded as
// one flat object; offers while one runs, or fewer than N steps after the last, are declined; a
// broken checkpoint is logged and the next offer still works; destruction stops a long
// fine-tuning between batches instead of waiting for it.
#include "peer/DownstreamMonitor.h"

#include "model/Tokenizer.h"
#include "train/Trainer.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

using namespace dedloc;
namespace fs = std::filesystem;

namespace {

// The header and the first `rows` rows of one split of the bundled task.
void copyRows(const fs::path &from, const fs::path &to, int rows)
{
    std::ifstream in(from);
    std::ofstream out(to);
    std::string line;
    for (int i = 0; i <= rows && std::getline(in, line); ++i)
        out << line << '\n';
}

struct Records {
    std::mutex mutex;
    std::vector<nlohmann::json> list;
    void add(const nlohmann::json &j)
    {
        std::lock_guard lock(mutex);
        list.push_back(j);
    }
    std::size_t size()
    {
        std::lock_guard lock(mutex);
        return list.size();
    }
};

bool waitFor(const std::function<bool()> &done, double seconds)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        if (std::chrono::steady_clock::now() > until)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

} // namespace

class TestDownstreamMonitor : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    fs::path m_root;
    RunManifest m_manifest;
    DownstreamSchedule m_schedule;

private Q_SLOTS:
    void initTestCase()
    {
        m_root = m_dir.path().toStdString();
        m_manifest = test::tinyRun(m_root, 100000);
        const Tokenizer tokenizer(m_manifest.resolve(m_manifest.tokenizer.path));
        Trainer(m_manifest, tokenizer, {}).saveCheckpoint(m_root / "ckpt");
        const auto bundled = test::sourceResources() / "default-run" / "eval" / "bn_sib200_topic";
        fs::create_directories(m_root / "task");
        copyRows(bundled / "train.tsv", m_root / "task" / "train.tsv", 24);
        copyRows(bundled / "test.tsv", m_root / "task" / "test.tsv", 12);
        fs::copy_file(bundled / "labels.txt", m_root / "task" / "labels.txt");
        m_schedule.task = m_root / "task";
        m_schedule.everyNSteps = 5;
        m_schedule.options.fineTune.epochs = 1;
        m_schedule.options.fineTune.maxTokens = 64;
        m_schedule.options.fineTune.seed = 7;
    }

    void evaluatesWhenDueAndRecordsAFlatResult()
    {
        Records records;
        DownstreamMonitor monitor(m_manifest, m_schedule, m_root / "work1", [&](const auto &j) { records.add(j); });
        const auto checkpoint = m_root / "ckpt" / "checkpoint.ddlc";
        QVERIFY(monitor.offer(checkpoint, 5));
        QVERIFY(!monitor.offer(checkpoint, 20)); // one at a time
        QVERIFY(waitFor([&] { return monitor.finished() == 1; }, 300));
        QVERIFY(!monitor.offer(checkpoint, 9));  // fewer than 5 steps after 5
        QVERIFY(monitor.offer(checkpoint, 10));
        QVERIFY(waitFor([&] { return monitor.finished() == 2; }, 300));
        QCOMPARE(records.size(), std::size_t(2));
        for (const auto &r : records.list) {
            QCOMPARE(r.at("task").get<std::string>(), std::string("task"));
            QCOMPARE(r.at("step").get<long>(), 0L); // the checkpoint's own step
            QCOMPARE(r.at("train_examples").get<long>(), 24L);
            QCOMPARE(r.at("test_examples").get<long>(), 12L);
            QVERIFY(r.at("accuracy").get<double>() >= 0.0 && r.at("accuracy").get<double>() <= 1.0);
            QVERIFY(r.contains("control_accuracy") && r.contains("control_macro_f1"));
            QVERIFY(!r.contains("dev_accuracy")); // the task has no dev split
        }
        // The same checkpoint, seed and budget: the same scores; the control is carried over.
        QCOMPARE(records.list[1].at("accuracy"), records.list[0].at("accuracy"));
        QCOMPARE(records.list[1].at("control_macro_f1"), records.list[0].at("control_macro_f1"));
    }

    void aBrokenCheckpointIsLoggedAndTheNextOfferWorks()
    {
        Records records;
        DownstreamMonitor monitor(m_manifest, m_schedule, m_root / "work2", [&](const auto &j) { records.add(j); });
        writeFileAtomically(m_root / "broken.ddlc", "DDLCKPT1 and then nothing a reader accepts");
        QVERIFY(monitor.offer(m_root / "broken.ddlc", 5));
        QVERIFY(waitFor([&] { return monitor.finished() == 1; }, 60));
        QCOMPARE(records.size(), std::size_t(0));
        QVERIFY(!monitor.offer(m_root / "missing.ddlc", 30)); // cannot be copied: not started
        QVERIFY(monitor.offer(m_root / "ckpt" / "checkpoint.ddlc", 10));
        QVERIFY(waitFor([&] { return monitor.finished() == 2; }, 300));
        QCOMPARE(records.size(), std::size_t(1));
    }

    void destructionStopsALongFineTuning()
    {
        Records records;
        auto schedule = m_schedule;
        schedule.options.fineTune.epochs = 100000; // hours on this task
        QElapsedTimer timer;
        {
            DownstreamMonitor monitor(m_manifest, schedule, m_root / "work3", [&](const auto &j) { records.add(j); });
            QVERIFY(monitor.offer(m_root / "ckpt" / "checkpoint.ddlc", 5));
            std::this_thread::sleep_for(std::chrono::seconds(2)); // inside the fine-tuning
            timer.start();
        }
        QVERIFY2(timer.elapsed() < 30000, "the destructor waited for the fine-tuning to end");
        QCOMPARE(records.size(), std::size_t(0)); // a stopped evaluation records nothing
    }

    void aScheduleOfZeroStepsIsRefused()
    {
        auto schedule = m_schedule;
        schedule.everyNSteps = 0;
        QVERIFY(test::errorOf([&] { DownstreamMonitor(m_manifest, schedule, m_root / "w", [](const auto &) {}); })
                    .contains("expected >= 1"));
    }
};

QTEST_GUILESS_MAIN(TestDownstreamMonitor)
#include "tst_downstreammonitor.moc"
