#pragma once
// The accelerators: every GPU the probe found (GpuRow: name, usage, memory used/total,
// temperature, power and fan where known) with a check box each, "Train on GPU n". The headline
// names the GPUs that train ("Training on <names>"); with none ticked, "No GPU chosen: training
// on the CPU", and with no GPU at all, "Training on CPU"; in both cases the CPU's usage is shown.
// The panel shows the choice it is given (setChosen, from Settings::caps().gpus); a click on a
// check box emits chosenGpusChanged() with the whole new choice (sorted indices; indices of GPUs
// not present now are kept) and shows it at once. The window stores it in Settings, which hands
// it to the peer (PeerBridge::applySettings).
#include "system/GpuProbe.h"

#include <QGroupBox>

#include <vector>

class QFormLayout;
class QLabel;
class QProgressBar;
class QVBoxLayout;

namespace dedloc::ui {

class GpuRow;

class GpuPanel final : public QGroupBox {
    Q_OBJECT

  public:
    explicit GpuPanel(QWidget *parent = nullptr);
    // One sample per GPU in index order, or one CPU sample (GpuVendor::None): GpuProbe::sampleAll.
    void update(const std::vector<GpuSample> &samples);
    void setChosen(std::vector<int> gpus); // no signal
    [[nodiscard]] const std::vector<int> &chosen() const { return m_chosen; }
    // "Training on <the chosen GPUs' names>", "No GPU chosen: training on the CPU" or "Training on CPU".
    [[nodiscard]] QString headline() const;
    [[nodiscard]] int rowCount() const { return int(m_rows.size()); }
    [[nodiscard]] GpuRow *row(int i) const { return m_rows.at(std::size_t(i)); }

  Q_SIGNALS:
    void chosenGpusChanged(const std::vector<int> &gpus);

  private:
    void toggle(int index, bool train);
    void refresh(); // headline, ticks and the CPU row from m_samples and m_chosen

    QLabel *m_headline;
    QFormLayout *m_cpuForm;
    QLabel *m_cpuLabel;
    QProgressBar *m_cpuUsage;
    QVBoxLayout *m_rowsBox;
    std::vector<GpuRow *> m_rows;
    std::vector<GpuSample> m_samples; // the GPUs only
    std::vector<int> m_chosen{0};
};

} // namespace dedloc::ui
