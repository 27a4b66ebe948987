#include "TrayController.h"

#include "Format.h"
#include "PeerBridge.h"

#include <QAction>
#include <QMenu>
#include <QSystemTrayIcon>
#include <QWidget>

namespace dedloc::ui {

TrayController::TrayController(PeerBridge &bridge, QWidget &window, QObject *parent)
    : QObject(parent), m_window(window), m_menu(std::make_unique<QMenu>()), m_icon(new QSystemTrayIcon(this))
{
    m_pause = m_menu->addAction(tr("Pause"));
    m_resume = m_menu->addAction(tr("Resume"));
    m_pauseHour = m_menu->addAction(tr("Pause for 1 hour"));
    m_pauseTomorrow = m_menu->addAction(tr("Pause until tomorrow"));
    m_menu->addSeparator();
    m_show = m_menu->addAction(tr("Show window"));
    m_quit = m_menu->addAction(tr("Quit"));
    connect(m_pause, &QAction::triggered, &bridge, &PeerBridge::pauseManually);
    connect(m_resume, &QAction::triggered, &bridge, &PeerBridge::resumeManually);
    connect(m_pauseHour, &QAction::triggered, &bridge, [&bridge] { bridge.pauseFor(3600.0); });
    connect(m_pauseTomorrow, &QAction::triggered, &bridge, &PeerBridge::pauseUntilTomorrow);
    connect(m_show, &QAction::triggered, this, &TrayController::showWindow);
    connect(m_quit, &QAction::triggered, this, &TrayController::quitRequested);
    connect(m_icon, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason r) {
        if (r == QSystemTrayIcon::Trigger || r == QSystemTrayIcon::DoubleClick)
            showWindow();
    });
    connect(&bridge, &PeerBridge::snapshotChanged, this, &TrayController::update);
    m_icon->setContextMenu(m_menu.get());
    update(bridge.snapshot());
}

TrayController::~TrayController() = default;

bool TrayController::available()
{
    return QSystemTrayIcon::isSystemTrayAvailable();
}

void TrayController::show()
{
    if (available())
        m_icon->show();
}

void TrayController::hide() { m_icon->hide(); }

QRect TrayController::iconGeometry() const { return m_icon->isVisible() ? m_icon->geometry() : QRect(); }

void TrayController::showMessage(const QString &title, const QString &body)
{
    if (m_icon->isVisible())
        m_icon->showMessage(title, body, QSystemTrayIcon::Information, 8000);
}

QString TrayController::toolTip() const
{
    return m_icon->toolTip();
}

void TrayController::update(const PeerSnapshot &s)
{
    // Only on change: each setIcon/setToolTip is a D-Bus round trip for StatusNotifier trays.
    if (!m_haveState || s.state != m_state) {
        m_icon->setIcon(stateIcon(s.state));
        m_state = s.state;
        m_haveState = true;
    }
    const QString tip = tr("DeDLOC: %1").arg(stateExplanation(s));
    if (tip != m_icon->toolTip())
        m_icon->setToolTip(tip);
    const bool joined = s.state != PeerState::Idle && s.state != PeerState::Stopped;
    const bool paused = s.state == PeerState::Paused;
    m_pause->setEnabled(joined && !paused);
    m_pauseHour->setEnabled(joined);
    m_pauseTomorrow->setEnabled(joined);
    m_resume->setEnabled(joined && (paused || s.state == PeerState::Error));
}

void TrayController::showWindow()
{
    m_window.show();
    m_window.raise();
    m_window.activateWindow();
}

void TrayController::notifyHidden()
{
    if (m_hiddenNoticeShown || !m_icon->isVisible())
        return;
    m_hiddenNoticeShown = true;
    m_icon->showMessage(tr("DeDLOC keeps training"),
                        tr("The app runs in the tray. Right-click the icon to pause or quit."),
                        QSystemTrayIcon::Information, 5000);
}

} // namespace dedloc::ui
