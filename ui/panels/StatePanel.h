#pragma once
// The peer's state in one glance: icon, title (Connecting, Syncing, Training, Averaging, Paused,
// Error), one line saying why or what to do, the last round's status, and the Pause/Resume
// button (the window's one main control after Join). Emits pauseClicked / resumeClicked; the
// window connects them to the bridge.
#include "face/PeerStatus.h"

#include <QGroupBox>

class QLabel;
class QPushButton;

namespace dedloc::ui {

class StatePanel final : public QGroupBox {
    Q_OBJECT

  public:
    explicit StatePanel(QWidget *parent = nullptr);
    void update(const PeerSnapshot &snapshot);
    [[nodiscard]] QString title() const; // "Training"
    [[nodiscard]] QString explanation() const;

  Q_SIGNALS:
    void pauseClicked();
    void resumeClicked();

  private:
    QLabel *m_icon;
    QLabel *m_title;
    QLabel *m_detail;
    QLabel *m_round;
    QPushButton *m_button;
    bool m_paused = false;
    bool m_haveState = false;
    PeerState m_state = PeerState::Idle;
};

} // namespace dedloc::ui
