// Crash-safe file replacement (util/AtomicFile.h) and SHA-256 (util/Hash.h): round trips,
// replacement, no temporary left behind, a full disk in the middle of a write leaves the old
// file intact, and SHA-256 against the FIPS 180-2 known answers.
#include "FileSizeLimit.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Hash.h"

#include "TestSupport.h"

#include <QtTest>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace fs = std::filesystem;

using dedloc::test::FileSizeLimit;

namespace {

using dedloc::test::errorOf;

std::string randomBytes(std::size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::string out(n, '\0');
    for (auto &c : out)
        c = static_cast<char>(rng() & 0xFF);
    return out;
}

// Names of the entries of `dir`, sorted.
QStringList entries(const fs::path &dir)
{
    QStringList out;
    for (const auto &e : fs::directory_iterator(dir))
        out << QString::fromStdString(e.path().filename().string());
    out.sort();
    return out;
}

} // namespace

class TestAtomicFile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTrip_data();
    void roundTrip();
    void replacesExistingFile();
    void noTemporaryLeftBehind();
    void staleTemporaryIsOverwritten();
    void writerInChunks();
    void abandonedWriterLeavesTargetUntouched();
    void fullDiskKeepsOldContent();
    void missingDirectoryIsAnError();
    void targetThatIsADirectoryIsAnError();
    void readMissingFileIsAnError();

    void sha256KnownAnswers_data();
    void sha256KnownAnswers();
    void sha256FileMatchesBytes_data();
    void sha256FileMatchesBytes();
    void sha256Incremental_data();
    void sha256Incremental();
    void sha256FileMissing();
    void toHexDigits();
};

void TestAtomicFile::roundTrip_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("text") << QByteArray("hello, world\n");
    QTest::newRow("bengali utf-8") << QByteArray("আমার সোনার বাংলা, ১২৩।\n");
    QTest::newRow("embedded NULs") << QByteArray("a\0b\0\0c", 6);
    const std::string big = randomBytes(3 * 1024 * 1024 + 17, 7);
    QTest::newRow("3 MiB random") << QByteArray(big.data(), static_cast<qsizetype>(big.size()));
}

void TestAtomicFile::roundTrip()
{
    QFETCH(QByteArray, content);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "out.bin";
    const std::string bytes(content.constData(), static_cast<std::size_t>(content.size()));
    dedloc::writeFileAtomically(file, bytes);
    QCOMPARE(fs::file_size(file), bytes.size());
    const std::string back = dedloc::readWholeFile(file);
    QCOMPARE(back.size(), bytes.size());
    QVERIFY(back == bytes);
}

void TestAtomicFile::replacesExistingFile()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "settings.json";
    dedloc::writeFileAtomically(file, std::string(10000, 'x'));
    QCOMPARE(fs::file_size(file), std::uintmax_t(10000));
    // A shorter replacement must not keep the tail of the old content.
    dedloc::writeFileAtomically(file, "short");
    QCOMPARE(dedloc::readWholeFile(file), std::string("short"));
    dedloc::writeFileAtomically(file, "");
    QCOMPARE(dedloc::readWholeFile(file), std::string());
    QCOMPARE(entries(dir.path().toStdString()), QStringList{QStringLiteral("settings.json")});
}

void TestAtomicFile::noTemporaryLeftBehind()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path root = dir.path().toStdString();
    dedloc::writeFileAtomically(root / "a.txt", "one");
    dedloc::writeFileAtomically(root / "b.txt", "two");
    dedloc::writeFileAtomically(root / "a.txt", "three");
    QCOMPARE(entries(root), (QStringList{QStringLiteral("a.txt"), QStringLiteral("b.txt")}));
    QCOMPARE(dedloc::readWholeFile(root / "a.txt"), std::string("three"));
    QCOMPARE(dedloc::readWholeFile(root / "b.txt"), std::string("two"));
}

void TestAtomicFile::staleTemporaryIsOverwritten()
{
    // A crashed writer with the same pid (pids are reused) left "<target>.tmp-<pid>" behind,
    // longer than what we write now: none of its bytes may end up in the target.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "state.json";
    fs::path stale = file;
    stale += ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(stale, std::ios::binary);
        out << std::string(4096, 'S');
    }
    dedloc::writeFileAtomically(file, "{}");
    QCOMPARE(dedloc::readWholeFile(file), std::string("{}"));
    QVERIFY(!fs::exists(stale));
}

void TestAtomicFile::writerInChunks()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "chunks.bin";
    const std::string data = randomBytes(100000, 3);
    {
        dedloc::AtomicFileWriter w(file);
        std::size_t offset = 0;
        std::size_t chunk = 1;
        while (offset < data.size()) {
            const std::size_t n = std::min(chunk, data.size() - offset);
            w.write(data.data() + offset, n);
            offset += n;
            chunk = chunk * 3 + 1;
            QCOMPARE(w.bytesWritten(), offset);
        }
        // Before commit the target does not exist yet: only the temporary does.
        QVERIFY(!fs::exists(file));
        w.commit();
    }
    QVERIFY(dedloc::readWholeFile(file) == data);
    QCOMPARE(entries(dir.path().toStdString()), QStringList{QStringLiteral("chunks.bin")});
}

void TestAtomicFile::abandonedWriterLeavesTargetUntouched()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "manifest.json";
    dedloc::writeFileAtomically(file, "old content");
    {
        dedloc::AtomicFileWriter w(file);
        const std::string partial(5000, 'n');
        w.write(partial.data(), partial.size());
        QCOMPARE(entries(dir.path().toStdString()).size(), 2); // target + temporary
        // destroyed without commit(), as when an exception unwinds a save
    }
    QCOMPARE(dedloc::readWholeFile(file), std::string("old content"));
    QCOMPARE(entries(dir.path().toStdString()), QStringList{QStringLiteral("manifest.json")});
}

void TestAtomicFile::fullDiskKeepsOldContent()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "checkpoint.bin";
    const std::string old = randomBytes(20000, 11);
    dedloc::writeFileAtomically(file, old);

    const std::string replacement = randomBytes(1024 * 1024, 12); // far past the cap below
    QString message;
    {
        FileSizeLimit limit(64 * 1024);
        QVERIFY2(limit.ok(), "cannot lower RLIMIT_FSIZE");
        message = errorOf([&] { dedloc::writeFileAtomically(file, replacement); });
    } // limit restored here, before any assertion can return early

    QVERIFY2(message.contains(QLatin1String("full")) || message.contains(QLatin1String("File too large")),
             qPrintable(message));
    // The message names the file that was being written.
    QVERIFY2(message.contains(QLatin1String("checkpoint.bin")), qPrintable(message));
    QVERIFY2(dedloc::readWholeFile(file) == old, "the old content was damaged");
    QCOMPARE(entries(dir.path().toStdString()), QStringList{QStringLiteral("checkpoint.bin")});

    // The limit really is lifted again: the same write now succeeds.
    dedloc::writeFileAtomically(file, replacement);
    QVERIFY(dedloc::readWholeFile(file) == replacement);
}

void TestAtomicFile::missingDirectoryIsAnError()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "no-such-dir" / "x.txt";
    const QString message = errorOf([&] { dedloc::writeFileAtomically(file, "x"); });
    QVERIFY2(message.contains(QLatin1String("no-such-dir")), qPrintable(message));
    QVERIFY(!fs::exists(file));
}

void TestAtomicFile::targetThatIsADirectoryIsAnError()
{
    // The rename at commit fails (EISDIR): an error naming the target, the directory untouched,
    // the temporary removed.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path root = dir.path().toStdString();
    const fs::path target = root / "run";
    fs::create_directory(target);
    dedloc::writeFileAtomically(target / "inside.txt", "keep");
    const QString message = errorOf([&] { dedloc::writeFileAtomically(target, "data"); });
    QVERIFY2(message.contains(QString::fromStdString(target.string())) && message.contains(QLatin1String("rename")),
             qPrintable(message));
    QVERIFY(fs::is_directory(target));
    QCOMPARE(dedloc::readWholeFile(target / "inside.txt"), std::string("keep"));
    QCOMPARE(entries(root), QStringList{QStringLiteral("run")});
}

void TestAtomicFile::readMissingFileIsAnError()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "absent.txt";
    const QString message = errorOf([&] { (void)dedloc::readWholeFile(file); });
    QVERIFY2(message.contains(QString::fromStdString(file.string())), qPrintable(message));
}

void TestAtomicFile::sha256KnownAnswers_data()
{
    // FIPS 180-2 appendix B and the empty message.
    QTest::addColumn<QByteArray>("message");
    QTest::addColumn<QString>("digest");
    QTest::newRow("abc") << QByteArray("abc")
                         << QStringLiteral("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    QTest::newRow("empty") << QByteArray()
                           << QStringLiteral("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    QTest::newRow("two blocks")
        << QByteArray("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
        << QStringLiteral("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    QTest::newRow("million a") << QByteArray(1000000, 'a')
                               << QStringLiteral("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

void TestAtomicFile::sha256KnownAnswers()
{
    QFETCH(QByteArray, message);
    QFETCH(QString, digest);
    QCOMPARE(QString::fromStdString(dedloc::sha256Hex(message.constData(), static_cast<std::size_t>(message.size()))),
             digest);

    // The same through a file.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "msg";
    dedloc::writeFileAtomically(file, std::string(message.constData(), static_cast<std::size_t>(message.size())));
    QCOMPARE(QString::fromStdString(dedloc::sha256File(file)), digest);
}

void TestAtomicFile::sha256FileMatchesBytes_data()
{
    QTest::addColumn<int>("size");
    QTest::newRow("1 byte") << 1;
    QTest::newRow("64 bytes (one block)") << 64;
    QTest::newRow("1 MiB (one read buffer)") << (1 << 20);
    QTest::newRow("2.5 MiB (several reads)") << (5 << 19) + 3;
}

void TestAtomicFile::sha256FileMatchesBytes()
{
    QFETCH(int, size);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "data.bin";
    const std::string data = randomBytes(static_cast<std::size_t>(size), static_cast<std::uint64_t>(size));
    dedloc::writeFileAtomically(file, data);
    const std::string fromFile = dedloc::sha256File(file);
    QCOMPARE(fromFile.size(), std::size_t(64));
    QCOMPARE(fromFile, dedloc::sha256Hex(data.data(), data.size()));
    // One changed byte changes the digest.
    std::string changed = data;
    changed[changed.size() / 2] = static_cast<char>(changed[changed.size() / 2] ^ 0x01);
    QVERIFY(dedloc::sha256Hex(changed.data(), changed.size()) != fromFile);
}

void TestAtomicFile::sha256Incremental_data()
{
    QTest::addColumn<int>("chunk");
    for (int chunk : {1, 7, 63, 64, 65, 1000, 4096, 100000})
        QTest::newRow(qPrintable(QStringLiteral("chunk %1").arg(chunk))) << chunk;
}

void TestAtomicFile::sha256Incremental()
{
    QFETCH(int, chunk);
    const std::string data = randomBytes(50021, 5);
    dedloc::Sha256 h;
    for (std::size_t offset = 0; offset < data.size(); offset += static_cast<std::size_t>(chunk))
        h.update(data.data() + offset, std::min<std::size_t>(static_cast<std::size_t>(chunk), data.size() - offset));
    QCOMPARE(h.finalHex(), dedloc::sha256Hex(data.data(), data.size()));

    // And the known answer for "abc" fed one byte at a time.
    dedloc::Sha256 abc;
    for (char c : std::string("abc"))
        abc.update(&c, 1);
    QCOMPARE(abc.finalHex(), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

void TestAtomicFile::sha256FileMissing()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path file = fs::path(dir.path().toStdString()) / "missing.bin";
    const QString message = errorOf([&] { (void)dedloc::sha256File(file); });
    QVERIFY2(message.contains(QString::fromStdString(file.string())), qPrintable(message));
}

void TestAtomicFile::toHexDigits()
{
    const unsigned char bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    QCOMPARE(dedloc::toHex(bytes, sizeof bytes), std::string("00017f80abff"));
    QCOMPARE(dedloc::toHex(bytes, 0), std::string());
}

QTEST_APPLESS_MAIN(TestAtomicFile)
#include "tst_atomicfile.moc"
