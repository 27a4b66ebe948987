#include "ContributionPanel.h"

#include "ContributionExport.h"
#include "Format.h"

#include <QFileDialog>
#include <QGridLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>

namespace dedloc::ui {

ContributionPanel::ContributionPanel(QWidget *parent)
    : QGroupBox(tr("Your contribution"), parent), m_share(new QLabel(this)), m_rate(new QLabel(this)),
      m_computing(new QLabel(this)), m_credit(new QLabel(this)), m_export(new QPushButton(tr("Export record..."), this))
{
    setObjectName("contributionPanel");
    auto *grid = new QGridLayout(this);
    grid->addWidget(new QLabel(tr("<b>This session</b>"), this), 0, 1, Qt::AlignRight);
    grid->addWidget(new QLabel(tr("<b>All time</b>"), this), 0, 2, Qt::AlignRight);
    const QString rows[] = {tr("Samples"), tr("Compute time"), tr("Global steps taken part in")};
    for (int r = 0; r < 3; ++r) {
        grid->addWidget(new QLabel(rows[r], this), r + 1, 0);
        for (int c = 0; c < 2; ++c) {
            m_cells[r][c] = new QLabel(this);
            m_cells[r][c]->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
            grid->addWidget(m_cells[r][c], r + 1, c + 1);
        }
    }
    m_cells[0][0]->setObjectName("sessionSamples");
    grid->addWidget(new QLabel(tr("Share of the swarm"), this), 4, 0);
    grid->addWidget(m_share, 4, 1, 1, 2, Qt::AlignRight);
    grid->addWidget(new QLabel(tr("Your speed"), this), 5, 0);
    grid->addWidget(m_rate, 5, 1, 1, 2, Qt::AlignRight);
    // Computing rather than waiting for the network (averaging, downloads) over the last steps.
    grid->addWidget(new QLabel(tr("Computing"), this), 6, 0);
    m_computing->setObjectName("computing");
    grid->addWidget(m_computing, 6, 1, 1, 2, Qt::AlignRight);
    // What the swarm's monitor recorded of this peer: the count from outside, and whether it
    // matches this peer's own record; the record can be saved as CSV with the monitor's word.
    grid->addWidget(new QLabel(tr("Recorded by the monitor"), this), 7, 0);
    m_credit->setObjectName("monitorCredit");
    m_credit->setWordWrap(true);
    // Two lines kept free: a wrapped text is not given its height by the window's layout.
    m_credit->setMinimumHeight(2 * m_credit->fontMetrics().lineSpacing());
    grid->addWidget(m_credit, 7, 1, 1, 2, Qt::AlignRight);
    m_export->setObjectName("exportRecord");
    grid->addWidget(m_export, 8, 2, Qt::AlignRight);
    connect(m_export, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getSaveFileName(this, tr("Export the contribution record"),
                                                          QStringLiteral("dedloc-contribution.csv"), tr("CSV files (*.csv)"));
        QString error;
        if (!file.isEmpty() && !exportContributionRecord(m_record, m_lastCredit, file, &error))
            QMessageBox::warning(this, tr("Export the contribution record"), error);
    });
    update(PeerSnapshot{});
}

void ContributionPanel::update(const PeerSnapshot &s)
{
    const ContributionTotals *totals[] = {&s.session, &s.allTime};
    for (int c = 0; c < 2; ++c) {
        m_cells[0][c]->setText(formatCount(totals[c]->samples));
        m_cells[1][c]->setText(formatDuration(totals[c]->computeSeconds));
        m_cells[2][c]->setText(formatCount(totals[c]->stepsTakenPart));
    }
    m_share->setText(QStringLiteral("%1 %").arg(formatNumber(100.0 * s.shareOfSwarm, 1)));
    m_rate->setText(tr("%1 samples/s").arg(formatNumber(s.localSamplesPerSecond, 1)));
    m_computing->setText(s.computeUtilisation < 0.0
                             ? tr("not known yet")
                             : tr("%1 % of the time").arg(formatNumber(100.0 * s.computeUtilisation, 0)));
    m_credit->setText(monitorCreditText(s));
    m_record = QString::fromStdString(s.contributionRecord);
    m_lastCredit = s.monitorCredit;
    m_export->setEnabled(!m_record.isEmpty());
}

QString ContributionPanel::monitorCreditShown() const
{
    return m_credit->text();
}

QString ContributionPanel::computingText() const
{
    return m_computing->text();
}

QString ContributionPanel::sessionSamplesText() const
{
    return m_cells[0][0]->text();
}

} // namespace dedloc::ui
