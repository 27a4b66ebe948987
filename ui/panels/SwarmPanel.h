#pragma once
// The swarm: global step, progress toward the target batch with ETA, peers by role, swarm
// samples/s, and the loss of recent global steps as a Qt Charts line chart (x: global step,
// y: masked-LM loss in nats). The chart is rebuilt only when the loss history changed.
#include "face/PeerStatus.h"

#include <QGroupBox>

#include <vector>

class QChart;
class QChartView;
class QLabel;
class QLineSeries;
class QProgressBar;
class QValueAxis;

namespace dedloc::ui {

class SwarmPanel final : public QGroupBox {
    Q_OBJECT

  public:
    explicit SwarmPanel(QWidget *parent = nullptr);
    void update(const PeerSnapshot &snapshot);
    [[nodiscard]] int lossPoints() const;
    [[nodiscard]] int progressPercent() const;

  private:
    QLabel *m_step;
    QProgressBar *m_progress;
    QLabel *m_eta;
    QLabel *m_peers;
    QLabel *m_throughput;
    QChart *m_chart;
    QChartView *m_chartView;
    QLineSeries *m_series;
    QValueAxis *m_xAxis;
    QValueAxis *m_yAxis;
    long m_lastLossEpoch = -1;
    std::size_t m_lastLossCount = 0;
};

} // namespace dedloc::ui
