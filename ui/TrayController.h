#pragma once
// The tray icon (QSystemTrayIcon): its icon shows the peer's state, its tooltip the state line;
// its menu has Pause, Resume, Pause for 1 hour, Pause until tomorrow, Show window, Quit.
// A plain Pause lasts until Resume (AutoPausePolicy rule 1). "Until tomorrow" ends at
// Settings::resumeTomorrowAt() (default 08:00 local).
// The actions exist (and can be triggered, e.g. by tests or the window's menu) even where no tray
// is available; the icon is then simply not shown. Threads: GUI thread.
#include "face/PeerStatus.h"

#include <QObject>

#include <memory>

class QAction;
class QRect;
class QMenu;
class QSystemTrayIcon;
class QWidget;

namespace dedloc::ui {

class PeerBridge;

class TrayController final : public QObject {
    Q_OBJECT

  public:
    TrayController(PeerBridge &bridge, QWidget &window, QObject *parent = nullptr);
    ~TrayController() override;

    [[nodiscard]] static bool available(); // QSystemTrayIcon::isSystemTrayAvailable()
    void show();                           // shows the icon if a tray exists
    void hide();

    [[nodiscard]] QAction *pauseAction() const { return m_pause; }
    [[nodiscard]] QAction *resumeAction() const { return m_resume; }
    [[nodiscard]] QAction *pauseHourAction() const { return m_pauseHour; }
    [[nodiscard]] QAction *pauseTomorrowAction() const { return m_pauseTomorrow; }
    [[nodiscard]] QAction *showAction() const { return m_show; }
    [[nodiscard]] QAction *quitAction() const { return m_quit; }
    [[nodiscard]] QString toolTip() const;
    [[nodiscard]] QMenu *menu() const { return m_menu.get(); }
    // Where the tray host shows the icon (screen coordinates); empty when it is not shown.
    [[nodiscard]] QRect iconGeometry() const;

    // Shows a balloon once ("still running in the tray").
    void notifyHidden();
    // A balloon from the icon (where a tray shows it): the notifications' fallback.
    void showMessage(const QString &title, const QString &body);

  Q_SIGNALS:
    void quitRequested();

  private:
    void update(const PeerSnapshot &snapshot);
    void showWindow();

    QWidget &m_window;
    std::unique_ptr<QMenu> m_menu;
    QSystemTrayIcon *m_icon;
    QAction *m_pause, *m_resume, *m_pauseHour, *m_pauseTomorrow, *m_show, *m_quit;
    bool m_hiddenNoticeShown = false;
    bool m_haveState = false;
    PeerState m_state = PeerState::Idle;
};

} // namespace dedloc::ui
