#include "LoginAutostart.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QStandardPaths>

namespace dedloc::ui {
namespace {

// An Exec argument: quoted, with ", `, $ and \ escaped by a backslash (Desktop Entry
// Specification 1.5, "The Exec key"); a plain word stays as it is.
QString execArgument(const QString &argument)
{
    static const QString reserved = QStringLiteral(" \t\n\"'\\><~|&;$*?#()`=%");
    bool plain = !argument.isEmpty();
    for (const QChar c : argument)
        plain = plain && !reserved.contains(c);
    if (plain)
        return argument;
    QString quoted = QStringLiteral("\"");
    for (const QChar c : argument) {
        if (c == u'"' || c == u'`' || c == u'$' || c == u'\\')
            quoted += u'\\';
        quoted += c == u'%' ? QStringLiteral("%%") : QString(c);
    }
    return quoted + u'"';
}

} // namespace

QString loginAutostartFile()
{
    return QDir(QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation))
        .filePath(QStringLiteral("autostart/dedloc.desktop"));
}

bool loginAutostartEnabled()
{
    const QString file = loginAutostartFile();
    if (!QFileInfo(file).isFile())
        return false;
    QFile in(file);
    if (!in.open(QIODevice::ReadOnly | QIODevice::Text))
        return false;
    while (!in.atEnd()) {
        const QString line = QString::fromUtf8(in.readLine()).trimmed();
        if (line.compare(QStringLiteral("Hidden=true"), Qt::CaseInsensitive) == 0)
            return false;
    }
    return true;
}

bool setLoginAutostart(bool on, const QString &executable, QString *error)
{
    const QString file = loginAutostartFile();
    if (!on) {
        if (QFileInfo::exists(file) && !QFile::remove(file)) {
            *error = QStringLiteral("cannot remove %1").arg(file);
            return false;
        }
        return true;
    }
    if (!QDir().mkpath(QFileInfo(file).path())) {
        *error = QStringLiteral("cannot create %1").arg(QFileInfo(file).path());
        return false;
    }
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly | QIODevice::Text)) {
        *error = QStringLiteral("cannot write %1: %2").arg(file, out.errorString());
        return false;
    }
    const QString entry = QStringLiteral("[Desktop Entry]\n"
                                         "Type=Application\n"
                                         "Name=DeDLOC Desktop\n"
                                         "Comment=Donate idle GPU time to a collaborative training run\n"
                                         "Exec=%1 --in-tray --join\n"
                                         "Icon=dedloc\n"
                                         "Terminal=false\n"
                                         "X-GNOME-Autostart-enabled=true\n")
                              .arg(execArgument(executable));
    out.write(entry.toUtf8());
    if (!out.commit()) {
        *error = QStringLiteral("cannot write %1: %2").arg(file, out.errorString());
        return false;
    }
    return true;
}

} // namespace dedloc::ui
