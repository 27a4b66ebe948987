#pragma once
// The log view: LogModel's lines with a minimum-level filter; follows the newest line while the
// view is scrolled to the bottom.
#include <QGroupBox>

class QComboBox;
class QSortFilterProxyModel;
class QTableView;

namespace dedloc::ui {

class LogModel;

class LogPanel final : public QGroupBox {
    Q_OBJECT

  public:
    LogPanel(LogModel &model, QWidget *parent = nullptr);
    void setMinimumLevel(int level); // dedloc::log::Level as int
    [[nodiscard]] int visibleRows() const;

  private:
    QComboBox *m_level;
    QSortFilterProxyModel *m_proxy;
    QTableView *m_view;
};

} // namespace dedloc::ui
