#pragma once
// The accelerator: name, utilisation, memory used/total, temperature, power (GpuSample); with no
// GPU, "Training on CPU" and the CPU usage.
#include "system/GpuProbe.h"

#include <QGroupBox>

class QLabel;
class QProgressBar;

namespace dedloc::ui {

class GpuPanel final : public QGroupBox {
    Q_OBJECT

  public:
    explicit GpuPanel(QWidget *parent = nullptr);
    void update(const GpuSample &sample);
    [[nodiscard]] QString headline() const; // GPU name, or "Training on CPU"

  private:
    QLabel *m_name;
    QProgressBar *m_usage;
    QLabel *m_memory;
    QLabel *m_temperature;
    QLabel *m_power;
    QLabel *m_memoryLabel, *m_temperatureLabel, *m_powerLabel;
};

} // namespace dedloc::ui
