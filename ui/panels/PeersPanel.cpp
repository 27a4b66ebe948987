#include "PeersPanel.h"

#include "PeersTableModel.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace dedloc::ui {

PeersPanel::PeersPanel(PeersTableModel &model, QWidget *parent)
    : QGroupBox(tr("Peers"), parent), m_view(new QTableView(this))
{
    setObjectName("peersPanel");
    auto *proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(&model);
    m_view->setModel(proxy);
    m_view->setSortingEnabled(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setMinimumHeight(120);
    auto *box = new QVBoxLayout(this);
    box->addWidget(m_view);
}

} // namespace dedloc::ui
