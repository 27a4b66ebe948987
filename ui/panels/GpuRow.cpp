#include "GpuRow.h"

#include "Format.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QSignalBlocker>
#include <QVBoxLayout>

namespace dedloc::ui {

GpuRow::GpuRow(int index, QWidget *parent)
    : QWidget(parent), m_index(index), m_train(new QCheckBox(tr("Train on GPU %1").arg(localDigits(QString::number(index))), this)),
      m_name(new QLabel(this)), m_form(new QFormLayout), m_usage(new QProgressBar(this)), m_memory(new QLabel(this)),
      m_temperature(new QLabel(this)), m_power(new QLabel(this)), m_fan(new QLabel(this))
{
    setObjectName(QStringLiteral("gpuRow%1").arg(index));
    m_train->setObjectName(QStringLiteral("trainOnGpu%1").arg(index));
    m_train->setToolTip(tr("Untick to keep this GPU for yourself: the training leaves it at its next micro-batch."));
    m_name->setObjectName(QStringLiteral("gpuRowName"));
    m_name->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_usage->setRange(0, 100);
    auto *header = new QHBoxLayout;
    header->addWidget(m_train);
    header->addWidget(m_name, 1);
    m_form->setContentsMargins(0, 0, 0, 0);
    m_form->addRow(tr("Usage"), m_usage);
    m_form->addRow(tr("Memory"), m_memory);
    m_form->addRow(tr("Temperature"), m_temperature);
    m_form->addRow(tr("Power"), m_power);
    m_form->addRow(tr("Fan"), m_fan);
    auto *box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addLayout(header);
    box->addLayout(m_form);
    connect(m_train, &QCheckBox::clicked, this, [this](bool on) { Q_EMIT trainToggled(m_index, on); });
}

void GpuRow::update(const GpuSample &s)
{
    m_name->setText(QString::fromStdString(s.name));
    const double usage = s.utilisationPercent;
    m_usage->setValue(usage >= 0.0 ? int(usage + 0.5) : 0);
    m_usage->setFormat(usage >= 0.0 ? QStringLiteral("%p%") : tr("unknown"));
    m_form->setRowVisible(m_memory, s.memoryTotalBytes > 0);
    m_memory->setText(tr("%1 of %2").arg(formatBytes(s.memoryUsedBytes), formatBytes(s.memoryTotalBytes)));
    m_form->setRowVisible(m_temperature, s.temperatureCelsius >= 0.0);
    m_temperature->setText(QStringLiteral("%1 °C").arg(formatNumber(s.temperatureCelsius, 0)));
    m_form->setRowVisible(m_power, s.powerWatts >= 0.0);
    m_power->setText(QStringLiteral("%1 W").arg(formatNumber(s.powerWatts, 0)));
    m_form->setRowVisible(m_fan, s.fanPercent >= 0.0);
    m_fan->setText(QStringLiteral("%1%").arg(formatNumber(s.fanPercent, 0)));
}

void GpuRow::setChosen(bool chosen)
{
    const QSignalBlocker quiet(m_train);
    m_train->setChecked(chosen);
}

bool GpuRow::chosen() const
{
    return m_train->isChecked();
}

} // namespace dedloc::ui
