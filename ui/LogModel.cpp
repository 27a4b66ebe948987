#include "LogModel.h"

#include "Format.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace dedloc::ui {

QString LogModel::levelName(log::Level level)
{
    switch (level) {
    case log::Level::Debug:
        return tr("Debug");
    case log::Level::Info:
        return tr("Info");
    case log::Level::Warning:
        return tr("Warning");
    case log::Level::Error:
        return tr("Error");
    }
    return QString::fromLatin1(log::levelName(level));
}

LogModel::LogModel(QObject *parent, int capacity) : QAbstractTableModel(parent), m_capacity(std::max(1, capacity)) {}

LogModel::~LogModel()
{
    if (m_installed)
        log::setSink(std::move(m_previous));
}

QString LogModel::defaultLogFile()
{
    return QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) + QStringLiteral("/logs/dedloc.log");
}

void LogModel::install(const QString &logFile)
{
    if (!logFile.isEmpty()) {
        QDir().mkpath(QFileInfo(logFile).absolutePath());
        std::lock_guard lock(m_mutex);
        m_file.open(logFile.toStdString(), std::ios::app);
        m_logFileName = m_file ? logFile : QString();
    }
    auto previous = log::setSink([this](log::Level l, std::string_view c, std::string_view m) { receive(l, c, m); });
    if (!m_installed)
        m_previous = std::move(previous);
    m_installed = true;
    if (!logFile.isEmpty() && m_logFileName.isEmpty())
        log::warning("ui", "cannot write the log file " + logFile.toStdString() + "; logging to the window only");
}

void LogModel::receive(log::Level level, std::string_view category, std::string_view message)
{
    Line line{QDateTime::currentDateTime(), level, QString::fromUtf8(category.data(), qsizetype(category.size())),
              QString::fromUtf8(message.data(), qsizetype(message.size()))};
    bool first = false;
    {
        std::lock_guard lock(m_mutex);
        if (m_file) {
            m_file << line.time.toUTC().toString(Qt::ISODate).toStdString() << ' ' << log::levelName(level)[0] << ' '
                   << category << ": " << message << '\n';
            m_file.flush();
        }
        first = m_pending.empty();
        m_pending.push_back(std::move(line));
    }
    if (first)
        QMetaObject::invokeMethod(this, &LogModel::drain, Qt::QueuedConnection);
}

void LogModel::drain()
{
    std::vector<Line> incoming;
    {
        std::lock_guard lock(m_mutex);
        incoming.swap(m_pending);
    }
    if (incoming.empty())
        return;
    if (incoming.size() > std::size_t(m_capacity))
        incoming.erase(incoming.begin(), incoming.end() - m_capacity);
    const int overflow = int(m_lines.size() + incoming.size()) - m_capacity;
    if (overflow > 0) {
        beginRemoveRows({}, 0, overflow - 1);
        m_lines.erase(m_lines.begin(), m_lines.begin() + overflow);
        endRemoveRows();
    }
    beginInsertRows({}, int(m_lines.size()), int(m_lines.size() + incoming.size()) - 1);
    for (auto &l : incoming)
        m_lines.push_back(std::move(l));
    endInsertRows();
}

int LogModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_lines.size());
}

int LogModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LogModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const auto &l = m_lines[std::size_t(index.row())];
    if (role == LevelRole)
        return int(l.level);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Time:
        return localDigits(l.time.toString(QStringLiteral("HH:mm:ss")));
    case Level:
        return levelName(l.level);
    case Category:
        return l.category;
    case Message:
        return l.message;
    default:
        return {};
    }
}

QVariant LogModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const names[] = {QT_TR_NOOP("Time"), QT_TR_NOOP("Level"), QT_TR_NOOP("Category"),
                                        QT_TR_NOOP("Message")};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

} // namespace dedloc::ui
