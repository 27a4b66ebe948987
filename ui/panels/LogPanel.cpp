#include "LogPanel.h"

#include "LogModel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace dedloc::ui {
namespace {

class LevelFilter final : public QSortFilterProxyModel {
  public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setMinimum(int level)
    {
        m_minimum = level;
        invalidateFilter();
    }

  protected:
    bool filterAcceptsRow(int row, const QModelIndex &parent) const override
    {
        return sourceModel()->index(row, 0, parent).data(LogModel::LevelRole).toInt() >= m_minimum;
    }

  private:
    int m_minimum = 0;
};

} // namespace

LogPanel::LogPanel(LogModel &model, QWidget *parent)
    : QGroupBox(tr("Log"), parent), m_level(new QComboBox(this)), m_proxy(new LevelFilter(this)),
      m_view(new QTableView(this))
{
    setObjectName("logPanel");
    m_proxy->setSourceModel(&model);
    m_view->setModel(m_proxy);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setWordWrap(false);
    m_view->setMinimumHeight(120);
    m_level->addItems({tr("Debug"), tr("Info"), tr("Warning"), tr("Error")});
    m_level->setCurrentIndex(1);
    setMinimumLevel(1);
    connect(m_level, &QComboBox::currentIndexChanged, this, &LogPanel::setMinimumLevel);
    // Follow the tail only while the user has not scrolled up.
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, [this] {
        auto *bar = m_view->verticalScrollBar();
        if (bar->value() >= bar->maximum() - 2)
            m_view->scrollToBottom();
    });
    auto *top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Show from level"), this));
    top->addWidget(m_level);
    top->addStretch(1);
    auto *box = new QVBoxLayout(this);
    box->addLayout(top);
    box->addWidget(m_view);
}

void LogPanel::setMinimumLevel(int level)
{
    static_cast<LevelFilter *>(m_proxy)->setMinimum(level);
    if (m_level->currentIndex() != level)
        m_level->setCurrentIndex(level);
}

int LogPanel::visibleRows() const
{
    return m_proxy->rowCount();
}

} // namespace dedloc::ui
