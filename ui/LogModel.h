#pragma once
// The program's log as a table for the log view (the window reads the same stream as stderr).
//
// install() replaces the dedloc::log sink. The sink runs on whatever thread logs (trainer,
// network, DHT threads): it appends the line to the log file (if one is set) and to a pending
// list under a mutex, and when that list was empty posts ONE queued invoke to the GUI thread,
// which moves all pending lines into the model at once (coalesced: a burst of 10,000 messages
// costs one event). The model keeps the newest `capacity` lines (default 5,000), dropping the
// oldest. The destructor restores the previous sink; after that no sink call is in flight
// (dedloc::log calls sinks under its mutex), and Qt drops a queued invoke to a deleted object.
// Columns: Time (local hh:mm:ss), Level, Category, Message. Role LevelRole gives the
// dedloc::log::Level as int (for filtering by level).
// Threads: the model itself on the GUI thread; the sink from any thread.
#include "util/Log.h"

#include <QAbstractTableModel>
#include <QDateTime>
#include <QString>

#include <deque>
#include <fstream>
#include <mutex>
#include <vector>

namespace dedloc::ui {

class LogModel final : public QAbstractTableModel {
    Q_OBJECT

  public:
    enum Column { Time, Level, Category, Message, ColumnCount };
    static constexpr int LevelRole = Qt::UserRole + 1;

    explicit LogModel(QObject *parent = nullptr, int capacity = 5000);
    ~LogModel() override;

    // Becomes the dedloc::log sink. `logFile` (optional) also receives every line, appended.
    void install(const QString &logFile = {});
    [[nodiscard]] QString logFile() const { return m_logFileName; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // Where the app keeps its log: QStandardPaths::AppLocalDataLocation + "/logs/dedloc.log".
    [[nodiscard]] static QString defaultLogFile();
    // A level as the Level column shows it, in the window's language (the file keeps English).
    [[nodiscard]] static QString levelName(log::Level level);

  private:
    struct Line {
        QDateTime time;
        log::Level level;
        QString category;
        QString message;
    };
    void receive(log::Level level, std::string_view category, std::string_view message); // any thread
    void drain();                                                                        // GUI thread

    int m_capacity;
    std::deque<Line> m_lines;
    bool m_installed = false;
    log::Sink m_previous;
    std::mutex m_mutex; // guards m_pending and m_file
    std::vector<Line> m_pending;
    std::ofstream m_file;
    QString m_logFileName;
};

} // namespace dedloc::ui
