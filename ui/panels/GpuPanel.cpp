#include "GpuPanel.h"

#include "Format.h"

#include <QFormLayout>
#include <QLabel>
#include <QProgressBar>

namespace dedloc::ui {

GpuPanel::GpuPanel(QWidget *parent)
    : QGroupBox(tr("GPU"), parent), m_name(new QLabel(this)), m_usage(new QProgressBar(this)),
      m_memory(new QLabel(this)), m_temperature(new QLabel(this)), m_power(new QLabel(this)),
      m_memoryLabel(new QLabel(tr("Memory"), this)), m_temperatureLabel(new QLabel(tr("Temperature"), this)),
      m_powerLabel(new QLabel(tr("Power"), this))
{
    setObjectName("gpuPanel");
    m_name->setObjectName("gpuName");
    m_usage->setRange(0, 100);
    auto *form = new QFormLayout(this);
    form->addRow(m_name);
    form->addRow(tr("Usage"), m_usage);
    form->addRow(m_memoryLabel, m_memory);
    form->addRow(m_temperatureLabel, m_temperature);
    form->addRow(m_powerLabel, m_power);
    update(GpuSample{});
}

void GpuPanel::update(const GpuSample &s)
{
    const bool gpu = s.vendor != GpuVendor::None;
    setTitle(gpu ? tr("GPU") : tr("CPU"));
    m_name->setText(gpu ? QString::fromStdString(s.name) : tr("Training on CPU"));
    m_name->setToolTip(QString::fromStdString(s.note));
    const double usage = gpu ? s.utilisationPercent : s.cpuUsagePercent;
    m_usage->setValue(usage >= 0.0 ? int(usage + 0.5) : 0);
    m_usage->setFormat(usage >= 0.0 ? (gpu ? QStringLiteral("%p%") : tr("%p% of %1 CPUs").arg(s.cpuCount))
                                    : tr("unknown"));
    for (QWidget *w : {static_cast<QWidget *>(m_memory), static_cast<QWidget *>(m_temperature),
                       static_cast<QWidget *>(m_power), static_cast<QWidget *>(m_memoryLabel),
                       static_cast<QWidget *>(m_temperatureLabel), static_cast<QWidget *>(m_powerLabel)})
        w->setVisible(gpu);
    m_memory->setText(s.memoryTotalBytes > 0
                          ? tr("%1 of %2").arg(formatBytes(s.memoryUsedBytes), formatBytes(s.memoryTotalBytes))
                          : tr("unknown"));
    m_temperature->setText(s.temperatureCelsius >= 0.0 ? QStringLiteral("%1 °C").arg(s.temperatureCelsius, 0, 'f', 0)
                                                       : tr("unknown"));
    m_power->setText(s.powerWatts >= 0.0 ? QStringLiteral("%1 W").arg(s.powerWatts, 0, 'f', 0) : tr("unknown"));
}

QString GpuPanel::headline() const
{
    return m_name->text();
}

} // namespace dedloc::ui
