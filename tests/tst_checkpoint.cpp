// Checkpoint files and rotation (core/train/Checkpoint.h): round trip, corruption, truncation,
// fallback to the previous good checkpoint, and a full disk that loses nothing.
#include "train/Checkpoint.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <sys/resource.h>

using namespace dedloc;

namespace {

Checkpoint sample(long step)
{
    Checkpoint c;
    c.meta = {{"step", step}, {"run_id", "r"}, {"rng", "1 2 3"}};
    c.tensors.push_back({"param.a", torch::arange(0, 12, torch::kFloat).reshape({3, 4}) * static_cast<float>(step)});
    c.tensors.push_back({"param.b", torch::full({5}, 0.25F * static_cast<float>(step))});
    c.tensors.push_back({"scalar", torch::full({}, 7.0F)});
    return c;
}

void flipByte(const std::filesystem::path &file, std::size_t offsetFromEnd)
{
    std::string data = readWholeFile(file);
    data[data.size() - offsetFromEnd] ^= 0x01;
    writeFileAtomically(file, data);
}

} // namespace

class TestCheckpoint final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTripKeepsMetaAndTensors()
    {
        QTemporaryDir dir;
        const auto file = std::filesystem::path(dir.path().toStdString()) / "c.ddlc";
        const auto original = sample(3);
        writeCheckpointFile(file, original);
        const auto back = readCheckpointFile(file);
        QCOMPARE(back.meta, original.meta);
        QCOMPARE(back.tensors.size(), original.tensors.size());
        for (std::size_t i = 0; i < back.tensors.size(); ++i) {
            QCOMPARE(back.tensors[i].name, original.tensors[i].name);
            QVERIFY(torch::equal(back.tensors[i].tensor, original.tensors[i].tensor));
        }
    }

    void corruptionIsDetected_data()
    {
        QTest::addColumn<int>("offsetFromEnd");
        QTest::newRow("trailer") << 3;
        QTest::newRow("tensor data") << 80;
        QTest::newRow("inside header") << -40; // negative: from the start
    }

    void corruptionIsDetected()
    {
        QFETCH(int, offsetFromEnd);
        QTemporaryDir dir;
        const auto file = std::filesystem::path(dir.path().toStdString()) / "c.ddlc";
        writeCheckpointFile(file, sample(1));
        const auto size = std::filesystem::file_size(file);
        flipByte(file, offsetFromEnd > 0 ? static_cast<std::size_t>(offsetFromEnd) : size - static_cast<std::size_t>(-offsetFromEnd));
        try {
            (void)readCheckpointFile(file);
            QFAIL("a corrupt checkpoint was accepted");
        } catch (const Error &e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("corrupt")), e.what());
        }
    }

    void truncatedAndForeignFilesAreRefused()
    {
        QTemporaryDir dir;
        const auto file = std::filesystem::path(dir.path().toStdString()) / "c.ddlc";
        writeCheckpointFile(file, sample(1));
        const std::string data = readWholeFile(file);
        writeFileAtomically(file, data.substr(0, data.size() / 2));
        QVERIFY_THROWS_EXCEPTION(Error, (void)readCheckpointFile(file));
        writeFileAtomically(file, "not a checkpoint at all, just some text that is long enough to pass size checks."
                                  "................................................................");
        QVERIFY_THROWS_EXCEPTION(Error, (void)readCheckpointFile(file));
        QVERIFY_THROWS_EXCEPTION(Error, (void)readCheckpointFile(file.string() + ".missing"));
    }

    // A checkpoint a stranger hands over, whole and with a valid trailer, whose header nests
    // `meta` 100,000 arrays deep: refused with a clear error (copying such a document would
    // recurse once per level and overflow the stack); 64 levels are still read.
    void deeplyNestedHeaderIsRefused()
    {
        QTemporaryDir dir;
        const auto file = std::filesystem::path(dir.path().toStdString()) / "c.ddlc";
        auto withMeta = [&](const std::string &meta) {
            // magic (8 bytes), header length (u64 little-endian), header, tensor data, SHA-256 hex
            std::string header = R"({"meta":)" + meta + R"(,"tensors":[]})";
            std::string body = "DDLCKPT1";
            for (int i = 0; i < 8; ++i)
                body.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
            body += header;
            writeFileAtomically(file, body + sha256Hex(body.data(), body.size()));
        };
        const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
        withMeta(nested(63)); // 63 in meta, 64 with the header object
        QCOMPARE(readCheckpointFile(file).meta.dump(), nested(63));
        for (const int depth : {64, 100000}) {
            withMeta(nested(depth));
            try {
                (void)readCheckpointFile(file);
                QFAIL("a checkpoint nested too deeply was read");
            } catch (const Error &e) {
                QVERIFY2(std::string(e.what()).find("nests deeper than 64 levels") != std::string::npos, e.what());
            }
        }
    }

    void storeRotatesAndFallsBackToThePreviousGoodOne()
    {
        QTemporaryDir dir;
        CheckpointStore store(dir.path().toStdString());
        store.save(sample(1));
        store.save(sample(2));
        QCOMPARE(readCheckpointFile(store.newestPath()).meta.at("step").get<long>(), 2L);
        QCOMPARE(readCheckpointFile(store.previousPath()).meta.at("step").get<long>(), 1L);

        flipByte(store.newestPath(), 100);
        auto loaded = store.loadNewestGood();
        QVERIFY(loaded.has_value());
        QCOMPARE(loaded->meta.at("step").get<long>(), 1L);
        // The refused file is moved aside, so the next save cannot rotate it over the good one.
        QVERIFY(!std::filesystem::exists(store.newestPath()));
        bool keptAside = false;
        for (const auto &e : std::filesystem::directory_iterator(dir.path().toStdString()))
            keptAside |= e.path().filename().string().starts_with("checkpoint.ddlc.refused-");
        QVERIFY(keptAside);
        store.save(sample(3));
        QCOMPARE(readCheckpointFile(store.newestPath()).meta.at("step").get<long>(), 3L);
        QCOMPARE(readCheckpointFile(store.previousPath()).meta.at("step").get<long>(), 1L);
    }

    void acceptCallbackCanRefuse()
    {
        QTemporaryDir dir;
        CheckpointStore store(dir.path().toStdString());
        store.save(sample(1));
        store.save(sample(2));
        auto onlyOdd = [](const Checkpoint &c) {
            if (c.meta.at("step").get<long>() % 2 == 0)
                throw Error("even step");
        };
        auto loaded = store.loadNewestGood(onlyOdd);
        QVERIFY(loaded.has_value());
        QCOMPARE(loaded->meta.at("step").get<long>(), 1L);
    }

    void fullDiskLosesNothing()
    {
        // Emulate a full disk without root: a file-size limit makes write() fail with EFBIG.
        QTemporaryDir dir;
        CheckpointStore store(dir.path().toStdString());
        store.save(sample(1));
        const auto before = readWholeFile(store.newestPath());

        auto big = sample(2);
        big.tensors.push_back({"param.big", torch::ones({1 << 20})}); // 4 MiB
        std::signal(SIGXFSZ, SIG_IGN);
        rlimit old{};
        getrlimit(RLIMIT_FSIZE, &old);
        rlimit small{1 << 20, old.rlim_max};
        QCOMPARE(setrlimit(RLIMIT_FSIZE, &small), 0);
        bool threw = false;
        QString message;
        try {
            store.save(big);
        } catch (const Error &e) {
            threw = true;
            message = QString::fromUtf8(e.what());
        }
        setrlimit(RLIMIT_FSIZE, &old);
        QVERIFY(threw);
        QVERIFY2(message.contains(QStringLiteral("full")), qPrintable(message));
        QCOMPARE(readWholeFile(store.newestPath()), before);
        int files = 0;
        for (const auto &e : std::filesystem::directory_iterator(dir.path().toStdString())) {
            (void)e;
            ++files;
        }
        QCOMPARE(files, 1); // no temporary file left behind, no rotation happened
    }
};

QTEST_APPLESS_MAIN(TestCheckpoint)
#include "tst_checkpoint.moc"
