#include "ContributionExport.h"

#include "Format.h"

#include <QFile>
#include <QSaveFile>
#include <QTextStream>

namespace dedloc::ui {

bool exportContributionRecord(const QString &record, const MonitorCredit &credit, const QString &output, QString *error)
{
    QFile in(record);
    if (!in.open(QIODevice::ReadOnly | QIODevice::Text)) {
        *error = QObject::tr("cannot read %1: %2").arg(record, in.errorString());
        return false;
    }
    const QByteArray header = in.readLine().trimmed();
    if (header != "step,time,samples,loss") {
        *error = QObject::tr("%1 is not a contribution record").arg(record);
        return false;
    }
    QSaveFile out(output);
    if (!out.open(QIODevice::WriteOnly | QIODevice::Text)) {
        *error = QObject::tr("cannot write %1: %2").arg(output, out.errorString());
        return false;
    }
    out.write("step,time,samples,loss,monitor\n");
    const long first = credit.ranges.empty() ? -1 : credit.ranges.front().first;
    while (!in.atEnd()) {
        const QByteArray line = in.readLine().trimmed();
        bool ok = false;
        const long step = line.left(line.indexOf(',')).toLong(&ok);
        if (!ok || line.count(',') != 3)
            continue; // a line cut by a crash: not part of the record
        const char *confirmed = "";
        if (first >= 0 && step >= first && step <= credit.throughStep())
            confirmed = credit.recorded(step) ? "yes" : "no";
        out.write(line + ',' + confirmed + '\n');
    }
    if (!out.commit()) {
        *error = QObject::tr("cannot write %1: %2").arg(output, out.errorString());
        return false;
    }
    return true;
}

QString monitorCreditText(const PeerSnapshot &s)
{
    const auto &c = s.monitorCredit;
    if (c.monitorId.empty())
        return QObject::tr("no monitor has answered yet");
    const QString counted = QObject::tr("%1 samples in %2 steps, through step %3")
                                .arg(formatCount(c.samples), formatCount(c.steps), formatCount(c.throughStep()));
    const auto &own = s.ownCredit;
    if (own.stepsMissed > 0)
        return QObject::tr("%1: the monitor missed %2 of your steps (%3 samples)")
            .arg(counted, formatCount(own.stepsMissed), formatCount(own.samplesMissed));
    if (own.samplesInRecordedSteps != c.samples)
        return QObject::tr("%1: differs from your record (%2 samples)").arg(counted, formatCount(own.samplesInRecordedSteps));
    return QObject::tr("%1: matches your record").arg(counted);
}

} // namespace dedloc::ui
