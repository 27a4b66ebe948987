#include "SettingsDialog.h"

#include "HeatLimitsBox.h"
#include "LoginAutostart.h"
#include "Settings.h"
#include "system/WeeklySchedule.h"
#include "util/Log.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QTimeEdit>
#include <QVBoxLayout>

#include <algorithm>

namespace dedloc::ui {
namespace {

QTime timeOf(int secondsOfDay)
{
    return QTime(0, 0).addSecs(secondsOfDay);
}
int secondsOf(const QTime &t)
{
    return QTime(0, 0).secsTo(t);
}

} // namespace

SettingsDialog::SettingsDialog(Settings &settings, QWidget *parent) : QDialog(parent), m_settings(settings)
{
    setObjectName("settingsDialog");
    setWindowTitle(tr("DeDLOC settings"));
    const auto caps = settings.caps();
    const auto rules = settings.pauseRules();

    auto *capsBox = new QGroupBox(tr("Limits (0 = no limit)"), this);
    auto *capsForm = new QFormLayout(capsBox);
    m_threads = new QSpinBox(capsBox);
    m_threads->setRange(0, 1024);
    m_threads->setValue(caps.cpuThreads);
    m_gpuFraction = new QDoubleSpinBox(capsBox);
    m_gpuFraction->setRange(0.0, 1.0);
    m_gpuFraction->setSingleStep(0.05);
    m_gpuFraction->setValue(caps.gpuMemoryFraction);
    m_microBatch = new QSpinBox(capsBox);
    m_microBatch->setRange(0, 4096);
    m_microBatch->setValue(caps.microBatchSize);
    m_upload = new QDoubleSpinBox(capsBox);
    m_upload->setObjectName("upload");
    m_upload->setRange(0.0, 1e7);
    m_upload->setSuffix(tr(" KiB/s"));
    m_upload->setValue(caps.uploadBytesPerSecond / 1024.0);
    m_download = new QDoubleSpinBox(capsBox);
    m_download->setRange(0.0, 1e7);
    m_download->setSuffix(tr(" KiB/s"));
    m_download->setValue(caps.downloadBytesPerSecond / 1024.0);
    capsForm->addRow(tr("CPU threads"), m_threads);
    capsForm->addRow(tr("Share of GPU memory"), m_gpuFraction);
    capsForm->addRow(tr("Micro-batch size"), m_microBatch);
    capsForm->addRow(tr("Upload"), m_upload);
    capsForm->addRow(tr("Download"), m_download);

    auto *pauseBox = new QGroupBox(tr("Pause by itself"), this);
    auto *pauseForm = new QFormLayout(pauseBox);
    m_onGraphics = new QCheckBox(tr("when another program uses the GPU for graphics (games)"), pauseBox);
    m_onGraphics->setChecked(rules.pauseOnGpuGraphics);
    m_onFullScreen = new QCheckBox(tr("when a program is full screen (games, films)"), pauseBox);
    m_onFullScreen->setObjectName(QStringLiteral("pauseOnFullScreen"));
    m_onFullScreen->setChecked(rules.pauseOnFullScreen);
    m_apps = new QPlainTextEdit(pauseBox);
    m_apps->setPlaceholderText(tr("one program name per line, e.g. blender"));
    QStringList apps;
    for (const auto &a : rules.listedApplications)
        apps << QString::fromStdString(a);
    m_apps->setPlainText(apps.join('\n'));
    m_apps->setMaximumHeight(80);
    m_onBattery = new QCheckBox(tr("on battery power"), pauseBox);
    m_onBattery->setChecked(rules.pauseOnBattery);
    m_schedule = new QCheckBox(tr("outside this weekly schedule:"), pauseBox);
    m_schedule->setChecked(rules.scheduleEnabled);
    m_scheduleText = new QPlainTextEdit(pauseBox);
    m_scheduleText->setObjectName(QStringLiteral("weeklySchedule"));
    m_scheduleText->setPlaceholderText(tr("one window per line, e.g.\nMon-Fri 18:00-08:00\nSat,Sun all day"));
    m_scheduleText->setPlainText(QString::fromStdString(formatWeeklySchedule(rules.schedule)));
    m_scheduleText->setMaximumHeight(80);
    m_scheduleError = new QLabel(pauseBox);
    m_scheduleError->setObjectName(QStringLiteral("scheduleError"));
    m_scheduleError->setStyleSheet(QStringLiteral("color: #b00020"));
    m_scheduleError->setWordWrap(true);
    m_scheduleError->hide();
    connect(m_scheduleText, &QPlainTextEdit::textChanged, this, [this] {
        const auto parsed = parseWeeklySchedule(m_scheduleText->toPlainText().toStdString());
        m_scheduleError->setText(QString::fromStdString(parsed.error));
        m_scheduleError->setVisible(!parsed.schedule);
    });
    m_userActive = new QCheckBox(tr("while I use the computer (where idle time is known)"), pauseBox);
    m_userActive->setChecked(rules.pauseWhenUserActive);
    m_idle = new QDoubleSpinBox(pauseBox);
    m_idle->setRange(10.0, 86400.0);
    m_idle->setSuffix(tr(" s without input"));
    m_idle->setValue(rules.userIdleThresholdSeconds);
    m_quiet = new QDoubleSpinBox(pauseBox);
    m_quiet->setRange(0.0, 3600.0);
    m_quiet->setSuffix(tr(" s"));
    m_quiet->setValue(rules.quietPeriodSeconds);
    m_tomorrow = new QTimeEdit(timeOf(settings.resumeTomorrowAt()), pauseBox);
    pauseForm->addRow(m_onGraphics);
    pauseForm->addRow(m_onFullScreen);
    pauseForm->addRow(tr("when these run"), m_apps);
    pauseForm->addRow(m_onBattery);
    pauseForm->addRow(m_schedule);
    pauseForm->addRow(m_scheduleText);
    pauseForm->addRow(m_scheduleError);
    pauseForm->addRow(m_userActive);
    pauseForm->addRow(tr("idle means"), m_idle);
    pauseForm->addRow(tr("resume after quiet for"), m_quiet);
    pauseForm->addRow(tr("\"Pause until tomorrow\" ends at"), m_tomorrow);

    m_rejoin = new QCheckBox(tr("Join the run automatically when the app starts"), this);
    m_rejoin->setChecked(settings.autoRejoin());
    m_atLogin = new QCheckBox(tr("Start DeDLOC in the tray when I log in, and join"), this);
    m_atLogin->setObjectName(QStringLiteral("startAtLogin"));
    m_atLogin->setChecked(loginAutostartEnabled());
    m_language = new QComboBox(this);
    m_language->setObjectName(QStringLiteral("language"));
    m_language->addItem(tr("the system's language"), QString());
    m_language->addItem(QStringLiteral("বাংলা"), QStringLiteral("bn")); // each language in its own words
    m_language->addItem(QStringLiteral("English"), QStringLiteral("en"));
    m_language->setCurrentIndex(std::max(0, m_language->findData(settings.language())));
    m_notify = new QCheckBox(tr("Notify me when DeDLOC pauses by itself, resumes or stops with an error"), this);
    m_notify->setObjectName(QStringLiteral("notifications"));
    m_notify->setChecked(settings.notifications());
    m_milestones = new QCheckBox(tr("... and each time my computer has trained on 10 000 more samples"), this);
    m_milestones->setObjectName(QStringLiteral("milestoneNotifications"));
    m_milestones->setChecked(settings.milestoneNotifications());

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        apply();
        accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *box = new QVBoxLayout(this);
    box->addWidget(capsBox);
    box->addWidget(pauseBox);
    m_heat = new HeatLimitsBox(rules, caps, this);
    box->addWidget(m_heat);
    box->addWidget(m_rejoin);
    box->addWidget(m_atLogin);
    auto *languageRow = new QHBoxLayout;
    languageRow->addWidget(new QLabel(tr("Language (after a restart):"), this));
    languageRow->addWidget(m_language, 1);
    box->addLayout(languageRow);
    box->addWidget(m_notify);
    box->addWidget(m_milestones);
    box->addWidget(buttons);
}

void SettingsDialog::apply()
{
    ResourceCaps caps = m_settings.caps(); // what the dialog does not show (the chosen GPUs) stays
    caps.cpuThreads = m_threads->value();
    caps.gpuMemoryFraction = m_gpuFraction->value();
    caps.microBatchSize = m_microBatch->value();
    caps.uploadBytesPerSecond = m_upload->value() * 1024.0;
    caps.downloadBytesPerSecond = m_download->value() * 1024.0;
    AutoPauseRules rules = m_settings.pauseRules();
    m_heat->apply(rules, caps);
    m_settings.setCaps(caps);

    rules.pauseOnGpuGraphics = m_onGraphics->isChecked();
    rules.pauseOnFullScreen = m_onFullScreen->isChecked();
    rules.listedApplications.clear();
    for (const auto &line : m_apps->toPlainText().split('\n'))
        if (!line.trimmed().isEmpty())
            rules.listedApplications.push_back(line.trimmed().toStdString());
    rules.pauseOnBattery = m_onBattery->isChecked();
    rules.scheduleEnabled = m_schedule->isChecked();
    if (const auto parsed = parseWeeklySchedule(m_scheduleText->toPlainText().toStdString()); parsed.schedule)
        rules.schedule = *parsed.schedule;
    else // the dialog shows the mistake under the text; the schedule in force stays
        log::error("ui", "the weekly schedule was not changed: " + parsed.error);
    rules.pauseWhenUserActive = m_userActive->isChecked();
    rules.userIdleThresholdSeconds = m_idle->value();
    rules.quietPeriodSeconds = m_quiet->value();
    m_settings.setPauseRules(rules);
    m_settings.setResumeTomorrowAt(secondsOf(m_tomorrow->time()));
    m_settings.setAutoRejoin(m_rejoin->isChecked());
    m_settings.setLanguage(m_language->currentData().toString());
    m_settings.setNotifications(m_notify->isChecked());
    m_settings.setMilestoneNotifications(m_milestones->isChecked());
    if (m_atLogin->isChecked() != loginAutostartEnabled()) {
        QString error;
        if (setLoginAutostart(m_atLogin->isChecked(), QCoreApplication::applicationFilePath(), &error))
            log::info("ui", std::string(m_atLogin->isChecked() ? "starts at login: " : "no longer starts at login: ") +
                                loginAutostartFile().toStdString());
        else
            log::error("ui", error.toStdString());
    }
}

} // namespace dedloc::ui
