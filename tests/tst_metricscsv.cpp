// The swarm's metrics as CSV (monitor/MetricsCsv.h): the fixed column set, RFC 4180 quoting,
// formula-looking text kept as text, missing fields as empty cells, the header written once,
// another version's file refused, and unwritable or full destinations reported as errors.
#include "monitor/MetricsCsv.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using dedloc::test::errorOf;
using dedloc::test::readLines;

namespace {


// Splits one CSV line into cells, undoing RFC 4180 quoting (a reader independent of the writer).
std::vector<std::string> parseCsvLine(const std::string &line)
{
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                cells.back() += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cells.back() += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            cells.emplace_back();
        } else {
            cells.back() += c;
        }
    }
    return cells;
}

int column(const char *name)
{
    const auto &c = dedloc::metricsCsvColumns();
    return static_cast<int>(std::find(c.begin(), c.end(), name) - c.begin());
}

} // namespace

class TestMetricsCsv : public QObject {
    Q_OBJECT
  private Q_SLOTS:
    void headerIsTheDocumentedColumnSet()
    {
        // docs/METRICS.md lists exactly these, in this order; changing them breaks dashboards.
        QCOMPARE(QString::fromStdString(dedloc::metricsCsvHeader()),
                 QStringLiteral("recorded_at,time,peer_id,name,role,step,global_epoch,samples,batch_samples,loss,"
                                "samples_per_s,lr,grad_norm,applied,averaged,complete,group_size,peers,round_s,"
                                "shard_elements,params_sha,val_loss"));
    }

    void cell_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        // JSON text in, cell out (plain literals: moc's tokenizer trips over raw strings here)
        QTest::newRow("plain text") << "\"trainer-1\"" << "trainer-1";
        QTest::newRow("comma") << "\"a,b\"" << "\"a,b\"";
        QTest::newRow("quote") << "\"say \\\"hi\\\"\"" << "\"say \"\"hi\"\"\"";
        QTest::newRow("newline") << "\"two\\nlines\"" << "\"two\nlines\"";
        QTest::newRow("carriage return") << "\"a\\rb\"" << "\"a\rb\"";
        QTest::newRow("formula") << "\"=HYPERLINK(\\\"x\\\")\"" << "\"'=HYPERLINK(\"\"x\"\")\"";
        QTest::newRow("plus") << "\"+1\"" << "'+1";
        QTest::newRow("minus text") << "\"-x\"" << "'-x";
        QTest::newRow("at") << "\"@cmd\"" << "'@cmd";
        QTest::newRow("negative number stays a number") << "-1" << "-1";
        QTest::newRow("integer") << "42" << "42";
        QTest::newRow("double") << "0.5" << "0.5";
        QTest::newRow("true") << "true" << "true";
        QTest::newRow("false") << "false" << "false";
        QTest::newRow("null") << "null" << "";
        QTest::newRow("empty text") << "\"\"" << "";
        QTest::newRow("object") << "{\"a\":1}" << "\"{\"\"a\"\":1}\"";
    }
    void cell()
    {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(dedloc::csvCell(nlohmann::json::parse(json.toStdString()))), expected);
    }

    void rowPutsFieldsInTheirColumnsAndLeavesMissingOnesEmpty()
    {
        const auto row = dedloc::metricsCsvRow({{"step", 7},
                                                {"peer_id", "abc"},
                                                {"loss", 8.25},
                                                {"applied", true},
                                                {"name", "x,y"},
                                                {"unknown_field", "ignored"}});
        const auto cells = parseCsvLine(row);
        QCOMPARE(cells.size(), dedloc::metricsCsvColumns().size());
        QCOMPARE(cells[column("step")], std::string("7"));
        QCOMPARE(cells[column("peer_id")], std::string("abc"));
        QCOMPARE(cells[column("loss")], std::string("8.25"));
        QCOMPARE(cells[column("applied")], std::string("true"));
        QCOMPARE(cells[column("name")], std::string("x,y"));
        for (const char *missing : {"recorded_at", "time", "role", "samples", "lr", "params_sha"})
            QVERIFY2(cells[column(missing)].empty(), missing);
        QVERIFY(row.find("ignored") == std::string::npos);
        // Not an object at all: every cell empty, still the right number of them.
        QCOMPARE(dedloc::metricsCsvRow(nlohmann::json::array()),
                 std::string(dedloc::metricsCsvColumns().size() - 1, ','));
    }

    void writerWritesTheHeaderOnceAndAppends()
    {
        QTemporaryDir tmp;
        const auto file = fs::path(tmp.path().toStdString()) / "sub" / "swarm.csv";
        {
            dedloc::MetricsCsvWriter w(file);
            QVERIFY(w.write({{"step", 1}, {"peer_id", "p1"}}));
            QVERIFY(w.write({{"step", 1}, {"peer_id", "p2"}, {"name", "line\nbreak"}}));
        }
        {
            dedloc::MetricsCsvWriter again(file);
            QVERIFY(again.write({{"step", 2}, {"peer_id", "p1"}}));
        }
        const auto l = readLines(file);
        // header + 3 rows, the quoted line break spanning two physical lines
        QCOMPARE(l.size(), std::size_t(5));
        QCOMPARE(l[0], dedloc::metricsCsvHeader());
        QCOMPARE(parseCsvLine(l[1])[column("peer_id")], std::string("p1"));
        QCOMPARE(parseCsvLine(l[2] + "\n" + l[3])[column("name")], std::string("line\nbreak"));
        QCOMPARE(parseCsvLine(l[4])[column("step")], std::string("2"));
    }

    void anotherVersionsFileIsRefusedNotMixed()
    {
        QTemporaryDir tmp;
        const auto file = fs::path(tmp.path().toStdString()) / "swarm.csv";
        std::ofstream(file) << "time,peer_id,step\n1,a,1\n";
        QVERIFY(errorOf([&] { dedloc::MetricsCsvWriter w(file); }).contains(QStringLiteral("other CSV columns")));
        QCOMPARE(readLines(file).size(), std::size_t(2)); // untouched
    }

    void unwritableDestinationsAreErrors()
    {
        QTemporaryDir tmp;
        const auto plainFile = fs::path(tmp.path().toStdString()) / "not-a-dir";
        std::ofstream(plainFile) << "x";
        QVERIFY(errorOf([&] {
                    dedloc::MetricsCsvWriter w(plainFile / "swarm.csv");
                }).contains(QStringLiteral("cannot create")));
        // A full disk: /dev/full takes the open but fails every write with ENOSPC.
        if (fs::exists("/dev/full"))
            QVERIFY(
                errorOf([&] { dedloc::MetricsCsvWriter w("/dev/full"); }).contains(QStringLiteral("No space left")));
        // An empty path writes nothing and never fails.
        dedloc::MetricsCsvWriter none{fs::path()};
        QVERIFY(none.write({{"step", 1}}));
    }
};

QTEST_APPLESS_MAIN(TestMetricsCsv)
#include "tst_metricscsv.moc"
