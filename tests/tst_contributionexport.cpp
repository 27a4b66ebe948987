// The exported contribution record (ui/ContributionExport.h): each own step marked "yes" where the
// monitor recorded it, "no" where it missed it within its span, "" where it has not said; a file
// that is not a record, or an output that cannot be written, is a clear error; and the sentence
// the window shows.
#include "ContributionExport.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace dedloc;
using namespace dedloc::ui;

namespace {

QString write(const QTemporaryDir &dir, const char *name, const QByteArray &text)
{
    QFile f(dir.filePath(QString::fromLatin1(name)));
    if (f.open(QIODevice::WriteOnly))
        f.write(text);
    return f.fileName();
}

QStringList read(const QString &file)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    return QString::fromUtf8(f.readAll()).split(u'\n', Qt::SkipEmptyParts);
}

} // namespace

class TestContributionExport final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void marksWhatTheMonitorRecorded()
    {
        QTemporaryDir dir;
        const QString record = write(dir, "contribution.csv",
                                     "step,time,samples,loss\n1,100,30,8.5\n2,110,32,8.4\n3,120,31,\n4,130,33,8.3\n5,140,"); // the last line cut
        MonitorCredit credit;
        credit.monitorId = "mon";
        credit.ranges = {{2, 2}, {4, 4}};
        QString error;
        const QString out = dir.filePath(QStringLiteral("export.csv"));
        QVERIFY2(exportContributionRecord(record, credit, out, &error), qPrintable(error));
        QCOMPARE(read(out), (QStringList{"step,time,samples,loss,monitor", "1,100,30,8.5,", "2,110,32,8.4,yes", "3,120,31,,no",
                                         "4,130,33,8.3,yes"}));
        QVERIFY(exportContributionRecord(record, MonitorCredit{}, out, &error)); // no monitor: nothing said
        QCOMPARE(read(out).value(2), QString("2,110,32,8.4,"));
    }

    void errorsAreClear()
    {
        QTemporaryDir dir;
        QString error;
        QVERIFY(!exportContributionRecord(dir.filePath(QStringLiteral("none.csv")), {}, dir.filePath(QStringLiteral("o.csv")), &error));
        QVERIFY2(error.startsWith(QStringLiteral("cannot read")), qPrintable(error));
        const QString other = write(dir, "other.csv", "a,b\n1,2\n");
        QVERIFY(!exportContributionRecord(other, {}, dir.filePath(QStringLiteral("o.csv")), &error));
        QVERIFY2(error.contains(QStringLiteral("is not a contribution record")), qPrintable(error));
        const QString record = write(dir, "c.csv", "step,time,samples,loss\n1,2,3,4\n");
        QVERIFY(!exportContributionRecord(record, {}, dir.filePath(QStringLiteral("no-such-dir/o.csv")), &error));
        QVERIFY2(error.startsWith(QStringLiteral("cannot write")), qPrintable(error));
    }

    void theWindowsSentence()
    {
        PeerSnapshot s;
        QCOMPARE(monitorCreditText(s), QString("no monitor has answered yet"));
        s.monitorCredit.monitorId = "mon";
        s.monitorCredit.samples = 1234;
        s.monitorCredit.steps = 40;
        s.monitorCredit.ranges = {{18, 57}};
        s.ownCredit.samplesInRecordedSteps = 1234;
        QCOMPARE(monitorCreditText(s), QString("1\u2009234 samples in 40 steps, through step 57: matches your record"));
        s.ownCredit.samplesInRecordedSteps = 1300;
        QVERIFY(monitorCreditText(s).endsWith(QString("differs from your record (1\u2009300 samples)")));
        s.ownCredit.stepsMissed = 2;
        s.ownCredit.samplesMissed = 64;
        QVERIFY(monitorCreditText(s).endsWith(QString("the monitor missed 2 of your steps (64 samples)")));
    }
};

QTEST_GUILESS_MAIN(TestContributionExport)
#include "tst_contributionexport.moc"
