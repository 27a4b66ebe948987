#include "PeersTableModel.h"

#include "Format.h"

#include <QString>

namespace dedloc::ui {

QString PeersTableModel::roleName(PeerRole role)
{
    switch (role) {
    case PeerRole::Trainer:
        return tr("trainer");
    case PeerRole::Auxiliary:
        return tr("auxiliary");
    case PeerRole::Monitor:
        return tr("monitor");
    }
    return QString::fromLatin1(peerRoleName(role));
}

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
        return roleName(p.role);
    case Reachability:
        return p.clientMode ? tr("client mode") : tr("reachable");
    case State:
        return peerActivity(p);
    case Epoch:
        return qlonglong(p.epoch);
    case Samples:
        return qlonglong(p.samplesAccumulated);
    case SamplesPerSecond:
        return formatNumber(p.samplesPerSecond, 1);
    case LastReport:
        return tr("%1 s ago").arg(formatNumber(p.secondsSinceReport, 0));
    default:
        return {};
    }
}

QVariant PeersTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const names[] = {QT_TR_NOOP("Peer"),    QT_TR_NOOP("Role"),      QT_TR_NOOP("Reachability"),
                                        QT_TR_NOOP("State"),   QT_TR_NOOP("Epoch"),     QT_TR_NOOP("Samples"),
                                        QT_TR_NOOP("Samples/s"), QT_TR_NOOP("Last report")};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

} // namespace dedloc::ui
