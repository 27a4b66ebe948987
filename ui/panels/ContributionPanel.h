#pragma once
// What this volunteer gave: samples, compute time and global steps taken part in, for this
// session and all time (kept across restarts by the core), the share of the swarm's samples, and
// the share of its time this trainer spent computing rather than waiting for the network, what
// the swarm's monitor recorded of it (and whether that matches its own record), and the export
// of that record (ContributionExport.h).
#include "face/PeerStatus.h"

#include <QGroupBox>

class QLabel;
class QPushButton;

namespace dedloc::ui {

class ContributionPanel final : public QGroupBox {
    Q_OBJECT

  public:
    explicit ContributionPanel(QWidget *parent = nullptr);
    void update(const PeerSnapshot &snapshot);
    [[nodiscard]] QString sessionSamplesText() const;
    [[nodiscard]] QString computingText() const;
    [[nodiscard]] QString monitorCreditShown() const;

  private:
    QLabel *m_cells[3][2]; // rows: samples, compute time, steps; columns: session, all time
    QLabel *m_share;
    QLabel *m_rate;
    QLabel *m_computing;
    QLabel *m_credit;
    QPushButton *m_export;
    QString m_record;           // the peer's contribution.csv; "" before its first step
    MonitorCredit m_lastCredit; // for the export
};

} // namespace dedloc::ui
