#pragma once
// The volunteer's settings, typed, over QSettings: auto-rejoin, resource
// caps, auto-pause rules and schedule, listed applications, quiet period, tray behaviour.
//
// Storage: the platform's QSettings location for organisation "dedloc", application "dedloc"
// (Linux: ~/.config/dedloc/dedloc.conf). Settings::forTesting(file) keeps everything in one INI
// file (a QTemporaryFile / QTemporaryDir path) so tests never touch the user's settings.
// Every setter writes through at once and emits changed() when the value actually changed.
// Threads: GUI thread only.
#include "face/PeerControl.h"
#include "system/AutoPausePolicy.h"

#include <QObject>
#include <QSettings>
#include <QStringList>

#include <memory>

namespace dedloc::ui {

class Settings final : public QObject {
    Q_OBJECT

  public:
    explicit Settings(QObject *parent = nullptr);
    [[nodiscard]] static std::unique_ptr<Settings> forTesting(const QString &iniFile);
    [[nodiscard]] QString fileName() const;

    // Join the last run again on the next start without asking.
    [[nodiscard]] bool autoRejoin() const;
    void setAutoRejoin(bool on);
    [[nodiscard]] QString lastJoinedRun() const; // run id; "" if never joined
    void setLastJoinedRun(const QString &runId);

    // Stored under caps/...; the chosen GPUs (ResourceCaps::gpus) as caps/gpus, "0,2" ("" the
    // CPU only; missing or not a list of indices: the default, GPU 0).
    [[nodiscard]] ResourceCaps caps() const;
    void setCaps(const ResourceCaps &caps);

    // Auto-pause rules (the policy's struct; times in local seconds of day, quiet period in s).
    [[nodiscard]] AutoPauseRules pauseRules() const;
    void setPauseRules(const AutoPauseRules &rules);

    // The window's language (Language.h): "" the system's, "bn" or "en"; used at the next start.
    [[nodiscard]] QString language() const;
    void setLanguage(const QString &language);

    // Desktop notifications (Notifier): on by default; milestones of samples contributed, off.
    [[nodiscard]] bool notifications() const;
    void setNotifications(bool on);
    [[nodiscard]] bool milestoneNotifications() const;
    void setMilestoneNotifications(bool on);

    // "Pause until tomorrow" ends at this local time (seconds of day, default 08:00).
    [[nodiscard]] int resumeTomorrowAt() const;
    void setResumeTomorrowAt(int localSecondsOfDay);

  Q_SIGNALS:
    void changed();

  private:
    explicit Settings(std::unique_ptr<QSettings> store, QObject *parent);
    bool store(const QString &key, const QVariant &value); // true if it changed; no signal
    void put(const QString &key, const QVariant &value);

    std::unique_ptr<QSettings> m_store;
};

} // namespace dedloc::ui
