#pragma once
// The "Heat and noise" group of the Settings dialog: limits on GPU and CPU temperature, GPU board
// power and fan speed (0 = no limit; AutoPausePolicy rule 2), the grace period and the cooling
// margin (hysteresis) of the temperatures, and the share of the time training may compute
// (ResourceCaps::computeShare, 10-100%). Reads from and writes into the settings' structs; the
// dialog stores them.
// Threads: GUI thread only.
#include "face/PeerControl.h"
#include "system/AutoPausePolicy.h"

#include <QGroupBox>

class QDoubleSpinBox;
class QSpinBox;

namespace dedloc::ui {

class HeatLimitsBox final : public QGroupBox {
    Q_OBJECT

  public:
    HeatLimitsBox(const AutoPauseRules &rules, const ResourceCaps &caps, QWidget *parent = nullptr);

    // Writes the fields into `rules` (the limits and grace) and `caps` (the compute share).
    void apply(AutoPauseRules &rules, ResourceCaps &caps) const;

  private:
    QSpinBox *m_gpuTemperature, *m_cpuTemperature, *m_gpuPower, *m_fan, *m_cooling, *m_share;
    QDoubleSpinBox *m_grace;
};

} // namespace dedloc::ui
