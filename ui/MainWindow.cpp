#include "MainWindow.h"

#include "Format.h"
#include "PeerBridge.h"
#include "PeersTableModel.h"
#include "Settings.h"
#include "panels/ContributionPanel.h"
#include "panels/GpuPanel.h"
#include "panels/JoinPage.h"
#include "panels/LogPanel.h"
#include "panels/PeersPanel.h"
#include "panels/StatePanel.h"
#include "panels/SwarmPanel.h"

#include <QCloseEvent>
#include <QGridLayout>
#include <QLabel>
#include <QMenuBar>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace dedloc::ui {

MainWindow::MainWindow(PeerBridge &bridge, PeersTableModel &peers, LogModel &log, Settings &settings,
                       const RunInfo &run, QWidget *parent)
    : QMainWindow(parent), m_bridge(bridge), m_pages(new QStackedWidget(this)),
      m_joinPage(new JoinPage(run, settings, this)), m_notice(new QLabel(this))
{
    setObjectName("mainWindow");
    setWindowTitle(tr("DeDLOC Desktop - %1").arg(QString::fromStdString(run.name)));
    setWindowIcon(appIcon());
    auto *menu = menuBar()->addMenu(tr("&DeDLOC"));
    menu->addAction(tr("&Settings..."), this, &MainWindow::settingsRequested);
    menu->addSeparator();
    menu->addAction(tr("&Quit"), QKeySequence::Quit, this, &MainWindow::quitRequested);

    m_notice->setObjectName("notice");
    m_notice->setWordWrap(true);
    m_notice->setStyleSheet("QLabel { background: #fff4d6; color: #5a4200; padding: 6px; border-radius: 4px; }");
    m_notice->hide();

    m_pages->addWidget(m_joinPage);
    m_pages->addWidget(makeDashboard(peers, log));
    auto *central = new QWidget(this);
    auto *box = new QVBoxLayout(central);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(m_notice);
    box->addWidget(m_pages, 1);
    setCentralWidget(central);
    resize(1000, 860);

    connect(m_joinPage, &JoinPage::joinClicked, &bridge, &PeerBridge::join);
    connect(&bridge, &PeerBridge::joinedChanged, this,
            [this](bool joined) { m_pages->setCurrentIndex(joined ? 1 : 0); });
    connect(&bridge, &PeerBridge::snapshotChanged, this, [this, &peers](const PeerSnapshot &s) {
        m_state->update(s);
        m_contribution->update(s);
        m_swarm->update(s);
        peers.setPeers(s.peers);
        if (s.state != m_shownState) {
            m_shownState = s.state;
            setWindowIcon(stateIcon(s.state));
        }
    });
    connect(&bridge, &PeerBridge::gpusSampled, m_gpu, &GpuPanel::update);
    // Ticking a GPU changes the caps in Settings; Settings::changed takes them to the peer
    // (PeerBridge::applySettings) and the ticks back to the panel.
    connect(m_gpu, &GpuPanel::chosenGpusChanged, &settings, [&settings](const std::vector<int> &gpus) {
        ResourceCaps caps = settings.caps();
        caps.gpus = gpus;
        settings.setCaps(caps);
    });
    connect(&settings, &Settings::changed, m_gpu, [this, &settings] { m_gpu->setChosen(settings.caps().gpus); });
    connect(m_state, &StatePanel::pauseClicked, &bridge, &PeerBridge::pauseManually);
    connect(m_state, &StatePanel::resumeClicked, &bridge, &PeerBridge::resumeManually);
    m_gpu->update(bridge.gpus());
    m_gpu->setChosen(settings.caps().gpus);
    m_pages->setCurrentIndex(bridge.joined() ? 1 : 0);
}

QWidget *MainWindow::makeDashboard(PeersTableModel &peers, LogModel &log)
{
    m_state = new StatePanel;
    m_gpu = new GpuPanel;
    m_contribution = new ContributionPanel;
    m_swarm = new SwarmPanel;
    m_peers = new PeersPanel(peers);
    m_log = new LogPanel(log);
    auto *content = new QWidget;
    auto *grid = new QGridLayout(content);
    grid->addWidget(m_state, 0, 0, 1, 2);
    grid->addWidget(m_gpu, 1, 0);
    grid->addWidget(m_contribution, 1, 1);
    grid->addWidget(m_swarm, 2, 0, 1, 2);
    grid->addWidget(m_peers, 3, 0, 1, 2);
    grid->addWidget(m_log, 4, 0, 1, 2);
    grid->setRowStretch(2, 2);
    grid->setRowStretch(3, 1);
    grid->setRowStretch(4, 1);
    auto *scroll = new QScrollArea;
    scroll->setObjectName("dashboard");
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(content);
    return scroll;
}

void MainWindow::setTrayAvailable(bool available)
{
    m_trayAvailable = available;
    if (available)
        m_notice->hide();
}

bool MainWindow::dashboardShown() const
{
    return m_pages->currentIndex() == 1;
}

QString MainWindow::noticeText() const
{
    return m_notice->isVisibleTo(this) ? m_notice->text() : QString();
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    event->ignore();
    if (m_trayAvailable) {
        hide();
        Q_EMIT hiddenToTray();
        return;
    }
    m_notice->setText(tr("This desktop has no system tray, so the window stays open while DeDLOC trains. "
                         "Pause with the button above; quit with DeDLOC > Quit."));
    m_notice->show();
}

} // namespace dedloc::ui
