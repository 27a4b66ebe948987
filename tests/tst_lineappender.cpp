// Whole-line appends (util/LineAppender.h): lines land in order and are readable at once by another
// reader, missing directories are created, an empty path writes nothing, open errors name the file
// and its purpose, close/reopen appends, the descriptor is close-on-exec and never leaked, and a
// failed write (a full device, a file-size cap reached halfway through a line) returns false with
// the reason, throws nothing, and leaves whole lines only.
#include "FileSizeLimit.h"
#include "util/Error.h"
#include "util/LineAppender.h"

#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using dedloc::test::errorOf;

using dedloc::test::FileSizeLimit;

namespace {

// The whole content of `file` as read through a stream of its own (empty if it cannot be read).
std::string contentOf(const fs::path &file)
{
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The descriptors of this process that refer to `file`, with their FD_CLOEXEC flag.
std::vector<std::pair<int, bool>> descriptorsOf(const fs::path &file)
{
    std::vector<std::pair<int, bool>> out;
    const fs::path target = fs::weakly_canonical(file);
    std::error_code ec;
    for (const auto &e : fs::directory_iterator("/proc/self/fd", ec)) {
        std::error_code linkEc;
        const fs::path linked = fs::read_symlink(e.path(), linkEc);
        if (linkEc || linked != target)
            continue;
        const int fd = std::stoi(e.path().filename().string());
        out.emplace_back(fd, (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    }
    return out;
}

} // namespace

class TestLineAppender : public QObject {
    Q_OBJECT
  private Q_SLOTS:
    void appendsLinesInOrderVisibleAtOnce()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path file = fs::path(tmp.path().toStdString()) / "metrics.jsonl";
        dedloc::LineAppender out;
        QVERIFY(!out.isOpen());
        out.open(file, "the test's metrics");
        QVERIFY(out.isOpen());
        QCOMPARE(out.path(), file);
        QVERIFY(fs::exists(file));
        QCOMPARE(contentOf(file), std::string());

        // Each line is in the file as soon as append() returns: no user-space buffer holds it.
        std::string expected;
        for (int i = 0; i < 5; ++i) {
            const std::string line = "{\"step\":" + std::to_string(i) + "}\n";
            QVERIFY(out.append(line));
            QCOMPARE(out.lastError(), std::string());
            QCOMPARE(out.lastErrno(), 0);
            expected += line;
            QCOMPARE(contentOf(file), expected);
        }
        // An empty line writes nothing and succeeds.
        QVERIFY(out.append(""));
        QCOMPARE(contentOf(file), expected);
        // A line far larger than a pipe or page buffer arrives whole.
        const std::string big = std::string(1 << 20, 'x') + "\n";
        QVERIFY(out.append(big));
        QCOMPARE(contentOf(file), expected + big);
    }

    void createsMissingDirectories()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path file = fs::path(tmp.path().toStdString()) / "a" / "b" / "c" / "swarm.csv";
        dedloc::LineAppender out;
        out.open(file, "the CSV metrics");
        QVERIFY(fs::is_directory(file.parent_path()));
        QVERIFY(out.append("step,loss\n"));
        QCOMPARE(contentOf(file), std::string("step,loss\n"));
        // A relative name without a directory part opens in the working directory.
        const fs::path cwd = fs::current_path();
        fs::current_path(tmp.path().toStdString());
        dedloc::LineAppender bare;
        const QString message = errorOf([&] { bare.open("bare.log", "a bare name"); });
        fs::current_path(cwd);
        QCOMPARE(message, QStringLiteral("<no exception>"));
        QVERIFY(bare.append("x\n"));
        QCOMPARE(contentOf(fs::path(tmp.path().toStdString()) / "bare.log"), std::string("x\n"));
    }

    void emptyPathWritesNothing()
    {
        dedloc::LineAppender none;
        none.open(fs::path(), "nothing");
        QVERIFY(!none.isOpen());
        QVERIFY(none.path().empty());
        QVERIFY(none.append("dropped\n"));
        QCOMPARE(none.lastError(), std::string());
        QCOMPARE(none.lastErrno(), 0);
        // A default-constructed appender is closed the same way.
        dedloc::LineAppender closed;
        QVERIFY(!closed.isOpen());
        QVERIFY(closed.append("dropped\n"));
        QCOMPARE(closed.lastError(), std::string());
    }

    void openErrorsNameFileAndPurpose()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path root = tmp.path().toStdString();
        // A parent that is a plain file cannot become a directory.
        const fs::path plainFile = root / "not-a-dir";
        std::ofstream(plainFile) << "x";
        dedloc::LineAppender out;
        const QString create = errorOf([&] { out.open(plainFile / "sub" / "m.jsonl", "the test's metrics"); });
        const QString createPrefix =
            QString::fromStdString("cannot create " + (plainFile / "sub").string() + " for the test's metrics: ");
        QVERIFY2(create.startsWith(createPrefix) && create.size() > createPrefix.size(), qPrintable(create));
        QVERIFY(!out.isOpen());
        QCOMPARE(contentOf(plainFile), std::string("x"));

        // A directory cannot be opened for writing, not even by root.
        const fs::path dir = root / "a-dir";
        fs::create_directory(dir);
        const QString open = errorOf([&] { out.open(dir, "the CSV metrics"); });
        QCOMPARE(open, QString::fromStdString("cannot open " + dir.string() + " for the CSV metrics: Is a directory"));
        QVERIFY(!out.isOpen());

        // A failed open closes what was open before: later appends go nowhere.
        const fs::path good = root / "good.log";
        out.open(good, "good");
        QVERIFY(out.append("one\n"));
        QVERIFY(errorOf([&] { out.open(dir, "again"); }).startsWith(QStringLiteral("cannot open ")));
        QVERIFY(!out.isOpen());
        QVERIFY(descriptorsOf(good).empty());
        QVERIFY(out.append("two\n"));
        QCOMPARE(contentOf(good), std::string("one\n"));
    }

    void closeReopenAppends()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path file = fs::path(tmp.path().toStdString()) / "m.jsonl";
        std::ofstream(file) << "existing\n";
        {
            dedloc::LineAppender out;
            out.open(file, "metrics");
            // Opening keeps what the file held.
            QCOMPARE(contentOf(file), std::string("existing\n"));
            QVERIFY(out.append("a\n"));
            out.close();
            QVERIFY(!out.isOpen());
            QVERIFY(descriptorsOf(file).empty());
            // Closed: nothing to write, and that is a success.
            QVERIFY(out.append("lost\n"));
            out.open(file, "metrics");
            QVERIFY(out.append("b\n"));
            out.close();
            out.close(); // a second close is harmless
        }
        dedloc::LineAppender again;
        again.open(file, "metrics");
        QVERIFY(again.append("c\n"));
        QCOMPARE(contentOf(file), std::string("existing\na\nb\nc\n"));
    }

    void descriptorIsCloseOnExecAndNotLeaked()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path first = fs::path(tmp.path().toStdString()) / "first.log";
        const fs::path second = fs::path(tmp.path().toStdString()) / "second.log";
        {
            dedloc::LineAppender out;
            out.open(first, "first");
            const auto fds = descriptorsOf(first);
            QCOMPARE(fds.size(), std::size_t(1));
            QVERIFY2(fds.front().second, "the descriptor would leak into child processes");
            // Opening another file closes the first one.
            out.open(second, "second");
            QVERIFY(descriptorsOf(first).empty());
            QCOMPARE(descriptorsOf(second).size(), std::size_t(1));
            QCOMPARE(out.path(), second);
        }
        // The destructor closes it.
        QVERIFY(descriptorsOf(second).empty());
    }

    void fullDeviceFailsWithoutThrowing()
    {
        if (!fs::exists("/dev/full"))
            QSKIP("no /dev/full");
        dedloc::LineAppender out;
        out.open("/dev/full", "a full disk");
        QVERIFY(out.isOpen());
        bool ok = true;
        bool threw = false;
        try {
            ok = out.append("{\"step\":1}\n");
        } catch (...) {
            threw = true;
        }
        QVERIFY(!threw);
        QVERIFY(!ok);
        QCOMPARE(out.lastErrno(), ENOSPC);
        QCOMPARE(out.lastError(), std::string("cannot append to /dev/full: No space left on device"));
        // The appender stays open; a retry fails the same way.
        QVERIFY(out.isOpen());
        QVERIFY(!out.append("{\"step\":2}\n"));
        QCOMPARE(out.lastErrno(), ENOSPC);
    }

    void partialWriteIsCutBack()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path file = fs::path(tmp.path().toStdString()) / "m.jsonl";
        dedloc::LineAppender out;
        out.open(file, "metrics");
        const std::string first = "first line\n"; // 11 bytes
        QVERIFY(out.append(first));

        ssize_t probeWritten = -1;
        bool acrossCap = true;
        bool atCap = true;
        int acrossErrno = 0;
        int atErrno = 0;
        std::string acrossError;
        std::string afterAcross;
        {
            // The cap falls 5 bytes into the next line: write(2) takes those 5, then refuses.
            FileSizeLimit limit(first.size() + 5);
            QVERIFY2(limit.ok(), "cannot lower RLIMIT_FSIZE");
            // write(2) itself stops at the cap, so the appender really sees a short write.
            const int probe =
                ::open((file.string() + ".probe").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            probeWritten = ::write(probe, "0123456789abcdefghij", 20);
            ::close(probe);
            acrossCap = out.append("second line, cut by the cap\n");
            acrossErrno = out.lastErrno();
            acrossError = out.lastError();
            afterAcross = contentOf(file);
            // Grown to the cap exactly, the file takes nothing at all.
            std::ofstream(file, std::ios::app) << "12345";
            atCap = out.append("third\n");
            atErrno = out.lastErrno();
        } // limit restored here, before any assertion can return early

        QCOMPARE(probeWritten, ssize_t(16));
        QVERIFY(!acrossCap);
        QCOMPARE(acrossErrno, EFBIG);
        QCOMPARE(acrossError, "cannot append to " + file.string() + ": File too large");
        // Only the whole first line is left: the 5 bytes of the second were cut off again.
        QCOMPARE(afterAcross, first);
        QVERIFY(!atCap);
        QCOMPARE(atErrno, EFBIG);
        QCOMPARE(contentOf(file), first + "12345");

        // With room again, a retry lands beside whole lines only and clears the error.
        fs::resize_file(file, first.size());
        QVERIFY(out.append("second line, cut by the cap\n"));
        QCOMPARE(out.lastError(), std::string());
        QCOMPARE(out.lastErrno(), 0);
        QCOMPARE(contentOf(file), first + "second line, cut by the cap\n");
    }
};

QTEST_APPLESS_MAIN(TestLineAppender)
#include "tst_lineappender.moc"
