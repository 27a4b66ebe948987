#pragma once
// The other peers of the swarm in a sortable table over PeersTableModel.
#include <QGroupBox>

class QTableView;

namespace dedloc::ui {

class PeersTableModel;

class PeersPanel final : public QGroupBox {
    Q_OBJECT

  public:
    PeersPanel(PeersTableModel &model, QWidget *parent = nullptr);
    [[nodiscard]] QTableView *view() const { return m_view; }

  private:
    QTableView *m_view;
};

} // namespace dedloc::ui
