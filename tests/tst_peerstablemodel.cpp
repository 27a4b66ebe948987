// PeersTableModel (ui/PeersTableModel.h): columns, updates in place when the peer set is the same,
// reset when it changes.
#include "PeersTableModel.h"

#include <QSignalSpy>
#include <QtTest>

using namespace dedloc;
using namespace dedloc::ui;

class TestPeersTableModel final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void columnsAndUpdates()
    {
        PeersTableModel m;
        QCOMPARE(m.rowCount(), 0);
        QCOMPARE(m.columnCount(), int(PeersTableModel::ColumnCount));
        std::vector<SwarmPeerInfo> peers{
            {"0123456789abcdef0123", PeerRole::Trainer, true, false, 5, 120, 33.24, 1.4},
            {"fedcba9876543210ffff", PeerRole::Auxiliary, false, true, 4, 0, 0.0, 12.6},
            {"aaaabbbbccccddddeeee", PeerRole::Monitor, false, false, 5, 0, 0.0, 0.5, false},
            {"1111222233334444ffff", PeerRole::Monitor, false, false, 5, 0, 0.0, 0.5, true},
            {"5555666677778888ffff", PeerRole::Auxiliary, false, false, 5, 0, 0.0, 0.5},
        };
        QSignalSpy reset(&m, &QAbstractItemModel::modelReset);
        QSignalSpy changed(&m, &QAbstractItemModel::dataChanged);
        m.setPeers(peers);
        QCOMPARE(reset.count(), 1);
        QCOMPARE(m.rowCount(), 5);
        auto cell = [&](int r, int c) { return m.index(r, c).data().toString(); };
        QCOMPARE(cell(0, PeersTableModel::Peer), QString("0123456789abcdef"));
        QCOMPARE(m.index(0, PeersTableModel::Peer).data(Qt::ToolTipRole).toString(), QString("0123456789abcdef0123"));
        QCOMPARE(cell(0, PeersTableModel::Role), QString("trainer"));
        QCOMPARE(cell(0, PeersTableModel::Reachability), QString("client mode"));
        QCOMPARE(cell(1, PeersTableModel::Reachability), QString("reachable"));
        QCOMPARE(cell(1, PeersTableModel::State), QString("paused"));
        // A monitor computes nothing: it is never shown as training.
        QCOMPARE(cell(0, PeersTableModel::State), QString("training"));
        QCOMPARE(cell(2, PeersTableModel::Role), QString("monitor"));
        QCOMPARE(cell(2, PeersTableModel::State), QString("recording"));
        QCOMPARE(cell(3, PeersTableModel::State), QString("recording, reducing"));
        QCOMPARE(cell(4, PeersTableModel::State), QString("averaging"));
        QCOMPARE(cell(0, PeersTableModel::Epoch), QString("5"));
        QCOMPARE(cell(0, PeersTableModel::Samples), QString("120"));
        QCOMPARE(cell(0, PeersTableModel::SamplesPerSecond), QString("33.2"));
        QCOMPARE(cell(1, PeersTableModel::LastReport), QString("13 s ago"));
        QCOMPARE(m.headerData(PeersTableModel::SamplesPerSecond, Qt::Horizontal).toString(), QString("Samples/s"));

        peers[0].samplesAccumulated = 160; // same peers: in place
        m.setPeers(peers);
        QCOMPARE(reset.count(), 1);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(cell(0, PeersTableModel::Samples), QString("160"));

        peers.pop_back(); // a peer left: reset
        m.setPeers(peers);
        QCOMPARE(reset.count(), 2);
        QCOMPARE(m.rowCount(), 4);
        QVERIFY(!m.index(5, 0).data().isValid());
    }
};

QTEST_GUILESS_MAIN(TestPeersTableModel)
#include "tst_peerstablemodel.moc"
