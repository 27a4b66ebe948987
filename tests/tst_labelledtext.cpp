// Labelled text sets (core/eval/LabelledText.h): RFC 4180 quoting with TAB, CRLF, errors that
// name file and line, label order, and the bundled SIB-200 Bengali set
// (resources/default-run/eval/bn_sib200_topic; counts from its SOURCE.md).
#include "eval/LabelledText.h"
#include "util/AtomicFile.h"

#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace dedloc;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> fieldsOf(const std::string &tsv, std::size_t record)
{
    return parseTsv(tsv, "x.tsv").at(record).fields;
}

fs::path writeTask(const QTemporaryDir &dir, const std::vector<std::pair<std::string, std::string>> &files)
{
    const fs::path root = dir.path().toStdString();
    for (const auto &[name, content] : files)
        writeFileAtomically(root / name, content);
    return root;
}

const std::string Header = "index_id\tcategory\ttext\n";

} // namespace

class TestLabelledText final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void plainFields()
    {
        const auto records = parseTsv("a\tb\tc\n1\t\t3\n", "x.tsv");
        QCOMPARE(records.size(), std::size_t{2});
        QCOMPARE(records[1].fields, (std::vector<std::string>{"1", "", "3"}));
        QCOMPARE(records[1].line, 2);
    }

    void quotedFieldsUndoubleQuotesAndKeepTabsAndLineBreaks()
    {
        // The SIB-200 files write a text that itself starts with a quote as """...
        QCOMPARE(fieldsOf("\"\"\"He said \"\"hi\"\".\"\"\"\tx\n", 0),
                 (std::vector<std::string>{"\"He said \"hi\".\"", "x"}));
        QCOMPARE(fieldsOf("\"a\tb\"\tc\n", 0), (std::vector<std::string>{"a\tb", "c"}));
        const auto records = parseTsv("h\n\"two\nlines\"\nnext\n", "x.tsv");
        QCOMPARE(records[1].fields.at(0), std::string("two\nlines"));
        QCOMPARE(records[2].line, 4); // line numbers count the break inside the quotes
        QCOMPARE(fieldsOf("\"\"\tx\n", 0), (std::vector<std::string>{"", "x"}));
    }

    void crlfRecordsAndNoFinalNewline()
    {
        const auto records = parseTsv("a\tb\r\n\"1\"\t2\r\n\r\n3\t4", "x.tsv");
        QCOMPARE(records.size(), std::size_t{3}); // the blank line is skipped
        QCOMPARE(records[1].fields, (std::vector<std::string>{"1", "2"}));
        QCOMPARE(records[2].fields, (std::vector<std::string>{"3", "4"}));
        QCOMPARE(records[2].line, 4);
        QCOMPARE(fieldsOf("\xEF\xBB\xBFtext\n", 0).at(0), std::string("text")); // byte-order mark
    }

    void badQuotingNamesFileAndLine_data()
    {
        QTest::addColumn<QString>("tsv");
        QTest::addColumn<QString>("expected");
        QTest::newRow("text after the closing quote") << "h\n\"a\"b\tc\n"
                                                      << "x.tsv:2: text after the closing quote";
        QTest::newRow("quote inside an unquoted field") << "h\nab\"c\n"
                                                        << "x.tsv:2: a quote inside an unquoted field";
        QTest::newRow("never closed: the line it opened on") << "h\nok\n\"open\nmore\nstill\n"
                                                             << "x.tsv:3: a quoted field is never closed";
    }
    void badQuotingNamesFileAndLine()
    {
        QFETCH(QString, tsv);
        QFETCH(QString, expected);
        const auto error = test::errorOf([&] { (void)parseTsv(tsv.toStdString(), "x.tsv"); });
        QVERIFY2(error.startsWith(expected), qPrintable(error));
    }

    void labelsFollowLabelsTxtOrder()
    {
        QTemporaryDir dir;
        const auto root = writeTask(dir, {{"train.tsv", Header + "1\tb\tone\n2\ta\ttwo\n3\tc\tthree\n"},
                                          {"test.tsv", Header + "4\ta\tfour\n"},
                                          {"labels.txt", "c\r\nb\n\na\n"}});
        const auto set = readLabelledTextSet(root);
        QCOMPARE(set.labels, (std::vector<std::string>{"c", "b", "a"}));
        QCOMPARE(set.train.size(), std::size_t{3});
        QCOMPARE(set.train[0].label, 1);
        QCOMPARE(set.train[1].label, 2);
        QCOMPARE(set.train[2].label, 0);
        QCOMPARE(set.train[2].text, std::string("three"));
        QCOMPARE(set.train[2].line, 4);
        QCOMPARE(set.test.at(0).label, 2);
        QVERIFY(set.dev.empty()); // dev.tsv is optional
    }

    void withoutLabelsTxtLabelsAreSortedTrainLabelsAndLabelColumnWorks()
    {
        QTemporaryDir dir;
        const auto root = writeTask(dir, {{"train.tsv", "text\tlabel\none\tzeta\ntwo\talpha\nthree\tzeta\n"},
                                          {"dev.tsv", "label\ttext\nalpha\tx\n"},
                                          {"test.tsv", "text\tlabel\nfour\tzeta\n"}});
        const auto set = readLabelledTextSet(root);
        QCOMPARE(set.labels, (std::vector<std::string>{"alpha", "zeta"}));
        QCOMPARE(set.train[0].label, 1);
        QCOMPARE(set.dev.at(0).label, 0);
        QCOMPARE(set.dev.at(0).text, std::string("x"));
    }

    void errorsNameFileAndLine_data()
    {
        QTest::addColumn<QString>("train");
        QTest::addColumn<QString>("test");
        QTest::addColumn<QString>("labels");   // "-": no labels.txt
        QTest::addColumn<QString>("expected"); // after the directory
        const QString h = QString::fromStdString(Header);
        QTest::newRow("unknown test label") << h + "1\ta\tx\n"
                                            << h + "2\ta\ty\n3\tb\tz\n"
                                            << "-"
                                            << "/test.tsv:3: label \"b\" is not among the labels of";
        QTest::newRow("train label not in labels.txt") << h + "1\ta\tx\n2\tq\ty\n"
                                                       << h + "2\ta\ty\n"
                                                       << "a\n"
                                                       << "/train.tsv:3: label \"q\" is not among the labels of";
        QTest::newRow("no text column") << "id\tcategory\tbody\n1\ta\tx\n"
                                        << h + "2\ta\ty\n"
                                        << "-"
                                        << "/train.tsv:1: the header has no column \"text\"";
        QTest::newRow("no label column") << "id\ttext\n1\tx\n"
                                         << h + "2\ta\ty\n"
                                         << "-"
                                         << "/train.tsv:1: the header has no column \"category\" or \"label\"";
        QTest::newRow("wrong field count") << h + "1\ta\tx\n2\ta\n"
                                           << h + "2\ta\ty\n"
                                           << "-"
                                           << "/train.tsv:3: 2 fields, the header has 3";
        QTest::newRow("empty split") << h << h + "2\ta\ty\n"
                                     << "-"
                                     << "/train.tsv: no examples";
        QTest::newRow("duplicate label") << h + "1\ta\tx\n"
                                         << h + "2\ta\ty\n"
                                         << "a\nb\na\n"
                                         << "/labels.txt:3: label \"a\" is listed twice";
        QTest::newRow("bad quoting") << h + "1\ta\t\"x\"y\n"
                                     << h + "2\ta\ty\n"
                                     << "-"
                                     << "/train.tsv:2: text after the closing quote";
    }
    void errorsNameFileAndLine()
    {
        QFETCH(QString, train);
        QFETCH(QString, test);
        QFETCH(QString, labels);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        std::vector<std::pair<std::string, std::string>> files{{"train.tsv", train.toStdString()},
                                                               {"test.tsv", test.toStdString()}};
        if (labels != "-")
            files.emplace_back("labels.txt", labels.toStdString());
        const auto root = writeTask(dir, files);
        const auto error = test::errorOf([&] { (void)readLabelledTextSet(root); });
        QVERIFY2(error.startsWith(QString::fromStdString(root.string()) + expected), qPrintable(error));
    }

    void missingFilesAreErrors()
    {
        QTemporaryDir dir;
        const auto root = writeTask(dir, {{"train.tsv", Header + "1\ta\tx\n"}});
        QCOMPARE(test::errorOf([&] { (void)readLabelledTextSet(root); }),
                 QString::fromStdString((root / "test.tsv").string()) +
                     ": missing (a task directory needs train.tsv and test.tsv)");
        QVERIFY(test::errorOf([&] { (void)readLabelledTextSet(root / "nowhere"); }).contains("not a task directory"));
    }

    void bundledSib200MatchesItsSourceMd()
    {
        const auto set = readLabelledTextSet(test::sourceResources() / "default-run" / "eval" / "bn_sib200_topic");
        QCOMPARE(set.labels, (std::vector<std::string>{"science/technology", "travel", "politics", "sports", "health",
                                                       "entertainment", "geography"}));
        QCOMPARE(set.train.size(), std::size_t{701});
        QCOMPARE(set.dev.size(), std::size_t{99});
        QCOMPARE(set.test.size(), std::size_t{204});
        // SOURCE.md's label counts, in labels.txt order.
        auto counts = [&](const std::vector<LabelledExample> &split) {
            std::vector<int> c(set.labels.size());
            for (const auto &e : split)
                ++c[static_cast<std::size_t>(e.label)];
            return c;
        };
        QCOMPARE(counts(set.train), (std::vector<int>{176, 138, 102, 85, 77, 65, 58}));
        QCOMPARE(counts(set.dev), (std::vector<int>{25, 20, 14, 12, 11, 9, 8}));
        QCOMPARE(counts(set.test), (std::vector<int>{51, 40, 30, 25, 22, 19, 17}));
        // A quoted record of train.tsv (line 13, 14 quotes in the file): Python's csv module reads
        // its text as starting with one quote and ending in three, six quotes in all.
        const auto quoted =
            std::find_if(set.train.begin(), set.train.end(), [](const auto &e) { return e.line == 13; });
        QVERIFY(quoted != set.train.end());
        QVERIFY(quoted->text.starts_with("\"\xE0"));
        QVERIFY(quoted->text.ends_with("\xE0\xA5\xA4\"\"\"")); // the danda, then """
        QCOMPARE(std::count(quoted->text.begin(), quoted->text.end(), '"'), 6);
    }
};

QTEST_APPLESS_MAIN(TestLabelledText)
#include "tst_labelledtext.moc"
