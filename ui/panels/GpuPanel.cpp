#include "GpuPanel.h"

#include "GpuRow.h"
#include "Format.h"

#include <QFormLayout>
#include <QFrame>
#include <QLabel>
#include <QProgressBar>
#include <QVBoxLayout>

#include <algorithm>

namespace dedloc::ui {

namespace {

void normalise(std::vector<int> &gpus)
{
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
}

} // namespace

GpuPanel::GpuPanel(QWidget *parent)
    : QGroupBox(tr("GPU"), parent), m_headline(new QLabel(this)), m_cpuForm(new QFormLayout),
      m_cpuLabel(new QLabel(tr("Usage"), this)), m_cpuUsage(new QProgressBar(this)), m_rowsBox(new QVBoxLayout)
{
    setObjectName("gpuPanel");
    m_headline->setObjectName("gpuName");
    m_headline->setWordWrap(true);
    m_cpuUsage->setObjectName("cpuUsage");
    m_cpuUsage->setRange(0, 100);
    m_cpuForm->setContentsMargins(0, 0, 0, 0);
    m_cpuForm->addRow(m_cpuLabel, m_cpuUsage);
    auto *box = new QVBoxLayout(this);
    box->addWidget(m_headline);
    box->addLayout(m_cpuForm);
    box->addLayout(m_rowsBox);
    box->addStretch(1);
    update({GpuSample{}});
}

void GpuPanel::update(const std::vector<GpuSample> &samples)
{
    std::vector<GpuSample> gpus;
    for (const auto &s : samples)
        if (s.vendor != GpuVendor::None)
            gpus.push_back(s);
    const bool sameGpus = std::equal(gpus.begin(), gpus.end(), m_rows.begin(), m_rows.end(),
                                     [](const GpuSample &s, const GpuRow *r) { return s.index == r->index(); });
    if (!sameGpus) { // the set of GPUs changed (or the first sample): new rows
        m_rows.clear();
        while (auto *item = m_rowsBox->takeAt(0)) {
            delete item->widget();
            delete item;
        }
        for (const auto &s : gpus) {
            if (!m_rows.empty()) {
                auto *line = new QFrame(this);
                line->setFrameShape(QFrame::HLine);
                line->setFrameShadow(QFrame::Sunken);
                m_rowsBox->addWidget(line);
            }
            auto *row = new GpuRow(s.index, this);
            connect(row, &GpuRow::trainToggled, this, &GpuPanel::toggle);
            m_rowsBox->addWidget(row);
            m_rows.push_back(row);
        }
    }
    for (std::size_t i = 0; i < gpus.size(); ++i)
        m_rows[i]->update(gpus[i]);
    m_samples = std::move(gpus);

    // The CPU's usage (every sample carries it); shown while the CPU trains.
    const GpuSample cpu = samples.empty() ? GpuSample{} : samples.front();
    const double usage = cpu.cpuUsagePercent;
    m_cpuUsage->setValue(usage >= 0.0 ? int(usage + 0.5) : 0);
    m_cpuUsage->setFormat(usage >= 0.0 ? tr("%p% of %1 CPUs").arg(formatCount(cpu.cpuCount)) : tr("unknown"));
    m_headline->setToolTip(m_samples.empty() ? QString::fromStdString(cpu.note) : QString());
    refresh();
}

void GpuPanel::setChosen(std::vector<int> gpus)
{
    normalise(gpus);
    m_chosen = std::move(gpus);
    refresh();
}

void GpuPanel::toggle(int index, bool train)
{
    std::vector<int> next = m_chosen;
    if (train)
        next.push_back(index);
    else
        next.erase(std::remove(next.begin(), next.end(), index), next.end());
    setChosen(std::move(next));
    Q_EMIT chosenGpusChanged(m_chosen);
}

void GpuPanel::refresh()
{
    QStringList training;
    for (std::size_t i = 0; i < m_rows.size(); ++i) {
        const bool chosen = std::binary_search(m_chosen.begin(), m_chosen.end(), m_rows[i]->index());
        m_rows[i]->setChosen(chosen);
        if (chosen)
            training << QString::fromStdString(m_samples[i].name);
    }
    const bool cpuTrains = training.isEmpty();
    setTitle(m_rows.empty() ? tr("CPU") : tr("GPU"));
    m_headline->setText(m_rows.empty() ? tr("Training on CPU")
                        : cpuTrains    ? tr("No GPU chosen: training on the CPU")
                                       : tr("Training on %1").arg(training.join(QStringLiteral(", "))));
    m_cpuLabel->setText(m_rows.empty() ? tr("Usage") : tr("CPU"));
    m_cpuForm->setRowVisible(m_cpuUsage, cpuTrains);
}

QString GpuPanel::headline() const
{
    return m_headline->text();
}

} // namespace dedloc::ui
