#include "JoinPage.h"

#include "Format.h"
#include "Settings.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace dedloc::ui {

JoinPage::JoinPage(const RunInfo &run, Settings &settings, QWidget *parent)
    : QWidget(parent), m_join(new QPushButton(tr("Join"), this)),
      m_rejoin(new QCheckBox(tr("Join again automatically next time"), this))
{
    setObjectName("joinPage");
    m_join->setObjectName("joinButton");
    auto *icon = new QLabel(this);
    icon->setPixmap(appIcon().pixmap(96, 96));
    auto *heading = new QLabel(
        tr("<h2>Donate your idle GPU to %1</h2>").arg(QString::fromStdString(run.name).toHtmlEscaped()), this);
    heading->setWordWrap(true);
    auto *about = new QLabel(QString::fromStdString(run.description).toHtmlEscaped(), this);
    about->setWordWrap(true);
    auto *form = new QFormLayout;
    auto row = [&](const QString &label, const QString &value) {
        auto *l = new QLabel(value.toHtmlEscaped(), this);
        l->setWordWrap(true);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
        form->addRow(label, l);
    };
    const QString name = QString::fromStdString(run.name);
    row(tr("Run"), run.runId.empty() ? name : tr("%1 (%2)").arg(name, QString::fromStdString(run.runId)));
    row(tr("Lead"), QString::fromStdString(run.lead));
    row(tr("Model"), QString::fromStdString(run.model));
    row(tr("Data"), QString::fromStdString(run.data));
    row(tr("Signature"), runInfoText(run.signatureStatus));
    if (!run.access.empty())
        row(tr("Access"), runInfoText(run.access));
    auto font = m_join->font();
    font.setPointSizeF(font.pointSizeF() * 1.4);
    m_join->setFont(font);
    m_join->setMinimumHeight(48);
    m_join->setDefault(true);
    m_rejoin->setChecked(settings.autoRejoin());
    connect(m_rejoin, &QCheckBox::toggled, &settings, &Settings::setAutoRejoin);
    connect(m_join, &QPushButton::clicked, this, &JoinPage::joinClicked);
    auto *note = new QLabel(tr("You can pause at any time from the window or the tray icon. "
                               "The app pauses by itself when a game uses the GPU."),
                            this);
    note->setWordWrap(true);

    auto *box = new QVBoxLayout(this);
    box->addStretch(1);
    box->addWidget(icon, 0, Qt::AlignHCenter);
    box->addWidget(heading);
    box->addWidget(about);
    box->addLayout(form);
    box->addSpacing(12);
    box->addWidget(m_join);
    box->addWidget(m_rejoin);
    box->addWidget(note);
    box->addStretch(2);
    box->setContentsMargins(48, 24, 48, 24);
}

} // namespace dedloc::ui
