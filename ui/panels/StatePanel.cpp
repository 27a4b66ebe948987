#include "StatePanel.h"

#include "Format.h"

#include <QGridLayout>
#include <QLabel>
#include <QPushButton>

namespace dedloc::ui {

StatePanel::StatePanel(QWidget *parent)
    : QGroupBox(tr("State"), parent), m_icon(new QLabel(this)), m_title(new QLabel(this)), m_detail(new QLabel(this)),
      m_round(new QLabel(this)), m_button(new QPushButton(tr("Pause"), this))
{
    setObjectName("statePanel");
    m_title->setObjectName("stateTitle");
    m_button->setObjectName("pauseResumeButton");
    auto font = m_title->font();
    font.setPointSizeF(font.pointSizeF() * 1.6);
    font.setBold(true);
    m_title->setFont(font);
    m_detail->setWordWrap(true);
    m_round->setWordWrap(true);
    m_round->setStyleSheet("color: palette(mid)");
    auto *grid = new QGridLayout(this);
    grid->addWidget(m_icon, 0, 0, 3, 1, Qt::AlignTop);
    grid->addWidget(m_title, 0, 1);
    grid->addWidget(m_button, 0, 2, Qt::AlignRight);
    grid->addWidget(m_detail, 1, 1, 1, 2);
    grid->addWidget(m_round, 2, 1, 1, 2);
    grid->setColumnStretch(1, 1);
    connect(m_button, &QPushButton::clicked, this, [this] {
        if (m_paused)
            Q_EMIT resumeClicked();
        else
            Q_EMIT pauseClicked();
    });
    update(PeerSnapshot{});
}

void StatePanel::update(const PeerSnapshot &s)
{
    if (!m_haveState || s.state != m_state) { // rendering the SVG each tick would waste the GUI thread
        m_icon->setPixmap(stateIcon(s.state).pixmap(48, 48));
        m_state = s.state;
        m_haveState = true;
    }
    m_title->setText(stateTitle(s.state));
    m_detail->setText(stateExplanation(s));
    m_round->setText(s.lastRoundStatus.empty() ? QString()
                                               : tr("Last round: %1").arg(QString::fromStdString(s.lastRoundStatus)));
    m_paused = s.state == PeerState::Paused || s.state == PeerState::Error;
    m_button->setText(m_paused ? tr("Resume") : tr("Pause"));
    m_button->setEnabled(s.state != PeerState::Idle && s.state != PeerState::Stopped);
}

QString StatePanel::title() const
{
    return m_title->text();
}
QString StatePanel::explanation() const
{
    return m_detail->text();
}

} // namespace dedloc::ui
