#pragma once
// The settings dialog: caps (CPU threads, GPU memory share, micro-batch, upload/download),
// auto-pause rules (GPU graphics, full screen, listed applications, battery, schedule, user
// active, quiet period), heat and noise (HeatLimitsBox), "pause until tomorrow" time,
// auto-rejoin, start at login (LoginAutostart). Reads Settings when made; writes them on
// OK (apply()); Cancel changes nothing. Bandwidth is entered in KiB/s (0 = no cap).
#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QSpinBox;
class QTimeEdit;

namespace dedloc::ui {

class HeatLimitsBox;
class Settings;

class SettingsDialog final : public QDialog {
    Q_OBJECT

  public:
    SettingsDialog(Settings &settings, QWidget *parent = nullptr);
    void apply(); // writes the fields to Settings (OK does this)

  private:
    Settings &m_settings;
    QSpinBox *m_threads, *m_microBatch;
    QDoubleSpinBox *m_gpuFraction, *m_upload, *m_download, *m_quiet, *m_idle;
    QCheckBox *m_onGraphics, *m_onBattery, *m_schedule, *m_userActive, *m_rejoin, *m_atLogin, *m_onFullScreen, *m_notify, *m_milestones;
    HeatLimitsBox *m_heat;
    QComboBox *m_language;
    QPlainTextEdit *m_apps;
    QTimeEdit *m_tomorrow;
    QPlainTextEdit *m_scheduleText;
    QLabel *m_scheduleError;
};

} // namespace dedloc::ui
