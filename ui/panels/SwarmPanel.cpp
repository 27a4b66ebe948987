#include "SwarmPanel.h"

#include "Format.h"

#include <QChart>
#include <QLocale>
#include <QChartView>
#include <QFormLayout>
#include <QLabel>
#include <QLineSeries>
#include <QPainter>
#include <QProgressBar>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>

namespace dedloc::ui {

SwarmPanel::SwarmPanel(QWidget *parent)
    : QGroupBox(tr("Swarm"), parent), m_step(new QLabel(this)), m_progress(new QProgressBar(this)),
      m_eta(new QLabel(this)), m_peers(new QLabel(this)), m_throughput(new QLabel(this)), m_chart(new QChart),
      m_series(new QLineSeries), m_xAxis(new QValueAxis), m_yAxis(new QValueAxis)
{
    setObjectName("swarmPanel");
    m_progress->setObjectName("batchProgress");
    m_progress->setRange(0, 1000);
    m_chart->addSeries(m_series); // the chart owns the series and axes
    m_chart->addAxis(m_xAxis, Qt::AlignBottom);
    m_chart->addAxis(m_yAxis, Qt::AlignLeft);
    m_series->attachAxis(m_xAxis);
    m_series->attachAxis(m_yAxis);
    m_series->setName(tr("loss"));
    m_xAxis->setTitleText(tr("global step"));
    m_xAxis->setLabelFormat("%d");
    m_yAxis->setTitleText(tr("loss (nats)"));
    m_chart->legend()->hide();
    m_chart->setLocale(QLocale()); // the axes' numbers in the window's digits (Language.h)
    m_chart->setLocalizeNumbers(true);
    m_chart->setMargins(QMargins(2, 2, 2, 2));
    m_chartView = new QChartView(m_chart, this); // takes ownership of the chart
    m_chartView->setRenderHint(QPainter::Antialiasing);
    m_chartView->setMinimumHeight(180);

    auto *box = new QVBoxLayout(this);
    auto *form = new QFormLayout;
    form->addRow(tr("Global step"), m_step);
    form->addRow(tr("Toward the next step"), m_progress);
    form->addRow(tr("Next step in"), m_eta);
    form->addRow(tr("Peers"), m_peers);
    form->addRow(tr("Swarm speed"), m_throughput);
    box->addLayout(form);
    box->addWidget(m_chartView, 1);
    update(PeerSnapshot{});
}

void SwarmPanel::update(const PeerSnapshot &s)
{
    m_step->setText(formatCount(s.globalEpoch));
    const double fraction =
        s.targetBatchSize > 0 ? std::clamp(s.swarmSamplesAccumulated / double(s.targetBatchSize), 0.0, 1.0) : 0.0;
    m_progress->setValue(int(fraction * 1000.0 + 0.5));
    const auto have = (long long)(s.swarmSamplesAccumulated);
    const bool reached = s.targetBatchSize > 0 && have >= s.targetBatchSize;
    m_progress->setFormat(reached ? tr("%1 samples: target of %2 reached").arg(formatCount(have), formatCount(s.targetBatchSize))
                                  : tr("%1 of %2 samples").arg(formatCount(have), formatCount(s.targetBatchSize)));
    m_eta->setText(reached ? tr("now") : formatDuration(s.etaSeconds));
    m_peers->setText(formatPeerCounts(s));
    m_throughput->setText(tr("%1 samples/s").arg(formatNumber(s.swarmSamplesPerSecond, 1)));

    const long lastEpoch = s.lossHistory.empty() ? -1 : s.lossHistory.back().epoch;
    if (lastEpoch == m_lastLossEpoch && s.lossHistory.size() == m_lastLossCount)
        return;
    m_lastLossEpoch = lastEpoch;
    m_lastLossCount = s.lossHistory.size();
    QList<QPointF> points;
    points.reserve(qsizetype(s.lossHistory.size()));
    double lo = 1e300, hi = -1e300;
    for (const auto &p : s.lossHistory) {
        points.append(QPointF(double(p.epoch), p.loss));
        lo = std::min(lo, p.loss);
        hi = std::max(hi, p.loss);
    }
    m_series->replace(points);
    if (points.isEmpty()) {
        m_xAxis->setRange(0, 1);
        m_yAxis->setRange(0, 1);
        return;
    }
    const double pad = std::max(0.05, (hi - lo) * 0.1);
    m_xAxis->setRange(points.front().x(), std::max(points.front().x() + 1.0, points.back().x()));
    m_yAxis->setRange(std::max(0.0, lo - pad), hi + pad);
}

int SwarmPanel::lossPoints() const
{
    return int(m_series->count());
}
int SwarmPanel::progressPercent() const
{
    return m_progress->value() / 10;
}

} // namespace dedloc::ui
