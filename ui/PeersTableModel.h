#pragma once
// The swarm's other peers as a table, fed from PeerSnapshot::peers by the bridge.
// Columns: Peer (first 16 hex digits of the id), Role, Reachability (reachable / client mode),
// State (training / paused), Epoch, Samples (toward the current global batch), Samples/s,
// Last report (seconds ago). Rows keep the snapshot's order. When the set of peer ids is unchanged
// an update emits dataChanged for the whole table (selection and scroll stay); otherwise the model
// resets. Threads: GUI thread only.
#include "face/PeerStatus.h"

#include <QAbstractTableModel>

#include <vector>

namespace dedloc::ui {

class PeersTableModel final : public QAbstractTableModel {
    Q_OBJECT

  public:
    enum Column { Peer, Role, Reachability, State, Epoch, Samples, SamplesPerSecond, LastReport, ColumnCount };

    using QAbstractTableModel::QAbstractTableModel;

    void setPeers(const std::vector<SwarmPeerInfo> &peers);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // A role as the Role column shows it ("trainer", "auxiliary", "monitor"), in the window's language.
    [[nodiscard]] static QString roleName(PeerRole role);

  private:
    std::vector<SwarmPeerInfo> m_peers;
};

} // namespace dedloc::ui
