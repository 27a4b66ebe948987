#pragma once
// One GPU in the GPU panel (GpuPanel): a "Train on GPU n" check box beside the GPU's name, then
// its usage bar, memory used/total, temperature, power and fan (the readings the probe knows;
// unknown ones are hidden, an unknown usage says so). The check box only reports the click
// (trainToggled); the panel owns the choice and sets the tick back with setChosen().
#include "system/GpuProbe.h"

#include <QWidget>

class QCheckBox;
class QFormLayout;
class QLabel;
class QProgressBar;

namespace dedloc::ui {

class GpuRow final : public QWidget {
    Q_OBJECT

  public:
    explicit GpuRow(int index, QWidget *parent = nullptr);
    [[nodiscard]] int index() const { return m_index; }
    void update(const GpuSample &sample);
    void setChosen(bool chosen); // no signal
    [[nodiscard]] bool chosen() const;
    [[nodiscard]] QCheckBox *trainBox() const { return m_train; }

  Q_SIGNALS:
    void trainToggled(int index, bool train); // the volunteer clicked the check box

  private:
    int m_index;
    QCheckBox *m_train;
    QLabel *m_name;
    QFormLayout *m_form;
    QProgressBar *m_usage;
    QLabel *m_memory, *m_temperature, *m_power, *m_fan;
};

} // namespace dedloc::ui
