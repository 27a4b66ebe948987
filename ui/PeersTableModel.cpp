#include "PeersTableModel.h"

#include "Format.h"

#include <QString>

namespace dedloc::ui {

void PeersTableModel::setPeers(const std::vector<SwarmPeerInfo> &peers)
{
    bool sameIds = peers.size() == m_peers.size();
    for (std::size_t i = 0; sameIds && i < peers.size(); ++i)
        sameIds = peers[i].peerId == m_peers[i].peerId;
    if (sameIds) {
        m_peers = peers;
        if (!m_peers.empty())
            Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        return;
    }
    beginResetModel();
    m_peers = peers;
    endResetModel();
}

int PeersTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_peers.size());
}

int PeersTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PeersTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const auto &p = m_peers[std::size_t(index.row())];
    if (role == Qt::TextAlignmentRole && index.column() >= Epoch)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && index.column() == Peer)
        return QString::fromStdString(p.peerId);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Peer:
        return QString::fromStdString(p.peerId.substr(0, 16));
    case Role:
        return QString::fromLatin1(peerRoleName(p.role));
    case Reachability:
        return p.clientMode ? QStringLiteral("client mode") : QStringLiteral("reachable");
    case State:
        return peerActivity(p);
    case Epoch:
        return qlonglong(p.epoch);
    case Samples:
        return qlonglong(p.samplesAccumulated);
    case SamplesPerSecond:
        return QString::number(p.samplesPerSecond, 'f', 1);
    case LastReport:
        return QStringLiteral("%1 s ago").arg(p.secondsSinceReport, 0, 'f', 0);
    default:
        return {};
    }
}

QVariant PeersTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const names[] = {"Peer",  "Role",    "Reachability", "State",
                                        "Epoch", "Samples", "Samples/s",    "Last report"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

} // namespace dedloc::ui
