#include "HeatLimitsBox.h"

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QSpinBox>

#include <cmath>

namespace dedloc::ui {
namespace {

QSpinBox *spin(QWidget *parent, const char *name, int lo, int hi, int value, const QString &suffix, const QString &zero = {})
{
    auto *box = new QSpinBox(parent);
    box->setObjectName(QString::fromLatin1(name));
    box->setRange(lo, hi);
    box->setSuffix(suffix);
    if (!zero.isEmpty())
        box->setSpecialValueText(zero); // shown for the minimum, 0: "no limit"
    box->setValue(value);
    return box;
}

} // namespace

HeatLimitsBox::HeatLimitsBox(const AutoPauseRules &rules, const ResourceCaps &caps, QWidget *parent)
    : QGroupBox(tr("Heat and noise"), parent)
{
    const QString off = tr("no limit");
    m_gpuTemperature = spin(this, "gpuTemperatureLimit", 0, 120, int(std::lround(rules.gpuTemperature.limit)), tr(" °C"), off);
    m_cpuTemperature = spin(this, "cpuTemperatureLimit", 0, 120, int(std::lround(rules.cpuTemperature.limit)), tr(" °C"), off);
    m_gpuPower = spin(this, "gpuPowerLimit", 0, 2000, int(std::lround(rules.gpuPower.limit)), tr(" W"), off);
    m_fan = spin(this, "fanLimit", 0, 100, int(std::lround(rules.fanSpeed.limit)), tr(" %"), off);
    m_cooling = spin(this, "coolingMargin", 1, 30, int(std::lround(rules.gpuTemperature.hysteresis)), tr(" °C"));
    m_share = spin(this, "computeShare", int(MinComputeShare * 100), 100,
                   int(std::lround(100.0 * (caps.computeShare > 0.0 ? caps.computeShare : 1.0))), tr(" % of the time"));
    m_grace = new QDoubleSpinBox(this);
    m_grace->setObjectName(QStringLiteral("limitGrace"));
    m_grace->setRange(0.0, 600.0);
    m_grace->setSuffix(tr(" s"));
    m_grace->setValue(rules.limitGraceSeconds);
    auto *form = new QFormLayout(this);
    form->addRow(tr("Pause when the GPU is hotter than"), m_gpuTemperature);
    form->addRow(tr("... the CPU is hotter than"), m_cpuTemperature);
    form->addRow(tr("... the GPU draws more than"), m_gpuPower);
    form->addRow(tr("... the GPU's fan runs faster than"), m_fan);
    form->addRow(tr("after staying above it for"), m_grace);
    form->addRow(tr("resume once it is cooler by"), m_cooling);
    form->addRow(tr("Train at most"), m_share);
}

void HeatLimitsBox::apply(AutoPauseRules &rules, ResourceCaps &caps) const
{
    const double cooling = m_cooling->value();
    // A temperature limit must stay above its cooling margin, or it would never clear.
    auto temperature = [cooling](int limit) { return limit > cooling ? HardwareLimit{double(limit), cooling} : HardwareLimit{0.0, cooling}; };
    rules.gpuTemperature = temperature(m_gpuTemperature->value());
    rules.cpuTemperature = temperature(m_cpuTemperature->value());
    rules.gpuPower = {double(m_gpuPower->value()), 0.0};
    rules.fanSpeed = {double(m_fan->value()), 0.0};
    rules.limitGraceSeconds = m_grace->value();
    caps.computeShare = m_share->value() / 100.0;
}

} // namespace dedloc::ui
