#pragma once
// The volunteer's window: the join page until the peer joins, then the dashboard of panels
// (state, GPU, contribution, swarm, peers, log). It only wires the bridge's signals to the
// panels, and the GPU panel's ticks to Settings (caps().gpus, which reach the peer through
// PeerBridge::applySettings); it knows nothing of the protocol.
//
// Closing the window: when a system tray exists the window hides and the app keeps training in
// the tray; without one (some Wayland desktops, Xvfb, offscreen) the window stays open and a
// notice says why and how to quit (menu DeDLOC > Quit).
#include "RunInfo.h"
#include "face/PeerStatus.h"

#include <QMainWindow>

class QLabel;
class QStackedWidget;

namespace dedloc::ui {

class ContributionPanel;
class GpuPanel;
class JoinPage;
class LogModel;
class LogPanel;
class PeerBridge;
class PeersPanel;
class PeersTableModel;
class Settings;
class StatePanel;
class SwarmPanel;

class MainWindow final : public QMainWindow {
    Q_OBJECT

  public:
    MainWindow(PeerBridge &bridge, PeersTableModel &peers, LogModel &log, Settings &settings, const RunInfo &run,
               QWidget *parent = nullptr);

    void setTrayAvailable(bool available);
    [[nodiscard]] bool trayAvailable() const { return m_trayAvailable; }
    [[nodiscard]] bool dashboardShown() const;
    [[nodiscard]] QString noticeText() const; // "" when no notice is shown

    [[nodiscard]] JoinPage *joinPage() const { return m_joinPage; }
    [[nodiscard]] StatePanel *statePanel() const { return m_state; }
    [[nodiscard]] GpuPanel *gpuPanel() const { return m_gpu; }
    [[nodiscard]] ContributionPanel *contributionPanel() const { return m_contribution; }
    [[nodiscard]] SwarmPanel *swarmPanel() const { return m_swarm; }
    [[nodiscard]] LogPanel *logPanel() const { return m_log; }

  Q_SIGNALS:
    void settingsRequested();
    void quitRequested();
    void hiddenToTray();

  protected:
    void closeEvent(QCloseEvent *event) override;

  private:
    QWidget *makeDashboard(PeersTableModel &peers, LogModel &log);

    PeerBridge &m_bridge;
    QStackedWidget *m_pages;
    JoinPage *m_joinPage;
    StatePanel *m_state = nullptr;
    GpuPanel *m_gpu = nullptr;
    ContributionPanel *m_contribution = nullptr;
    SwarmPanel *m_swarm = nullptr;
    PeersPanel *m_peers = nullptr;
    LogPanel *m_log = nullptr;
    QLabel *m_notice;
    bool m_trayAvailable = false;
    PeerState m_shownState = PeerState::Idle;
};

} // namespace dedloc::ui
