#include "Settings.h"

#include <algorithm>
#include <optional>

namespace dedloc::ui {

namespace {

// caps/gpus: the chosen GPUs' indices, "0,2"; "" the CPU only. Text that is not a list of
// indices reads as nothing (the caller keeps the default). A hand-edited unquoted "0,2" comes
// back from an INI file as a string list: joined again.
std::optional<std::vector<int>> parseGpus(const QVariant &stored)
{
    const QString text = stored.toStringList().join(QLatin1Char(','));
    std::vector<int> gpus;
    for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const int index = part.trimmed().toInt(&ok);
        if (!ok || index < 0)
            return std::nullopt;
        gpus.push_back(index);
    }
    if (gpus.empty() && !text.trimmed().isEmpty()) // "," or spaces only
        return std::nullopt;
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    return gpus;
}

QString formatGpus(std::vector<int> gpus)
{
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    QStringList parts;
    for (const int g : gpus)
        if (g >= 0)
            parts << QString::number(g);
    return parts.join(QLatin1Char(','));
}

} // namespace

Settings::Settings(QObject *parent)
    : Settings(std::make_unique<QSettings>(QStringLiteral("dedloc"), QStringLiteral("dedloc")), parent)
{
}

Settings::Settings(std::unique_ptr<QSettings> store, QObject *parent) : QObject(parent), m_store(std::move(store)) {}

std::unique_ptr<Settings> Settings::forTesting(const QString &iniFile)
{
    return std::unique_ptr<Settings>(new Settings(std::make_unique<QSettings>(iniFile, QSettings::IniFormat), nullptr));
}

QString Settings::fileName() const
{
    return m_store->fileName();
}

bool Settings::store(const QString &key, const QVariant &value)
{
    // INI files give strings back: compare in text form, so a reread value equals the one set.
    if (m_store->contains(key)) {
        const QVariant old = m_store->value(key);
        // A hand-written "a,b" reads as a list, whose toString() is "": never the same as a text.
        const bool list = value.typeId() == QMetaType::QStringList, oldList = old.typeId() == QMetaType::QStringList;
        const bool same = list ? old.toStringList() == value.toStringList()
                               : !oldList && old.toString() == value.toString();
        if (same)
            return false;
    }
    m_store->setValue(key, value);
    return true;
}

void Settings::put(const QString &key, const QVariant &value)
{
    if (!store(key, value))
        return;
    m_store->sync();
    Q_EMIT changed();
}

bool Settings::autoRejoin() const
{
    return m_store->value("join/autoRejoin", false).toBool();
}
void Settings::setAutoRejoin(bool on)
{
    put("join/autoRejoin", on);
}
QString Settings::lastJoinedRun() const
{
    return m_store->value("join/lastRun").toString();
}
void Settings::setLastJoinedRun(const QString &runId)
{
    put("join/lastRun", runId);
}

ResourceCaps Settings::caps() const
{
    ResourceCaps c;
    c.cpuThreads = std::max(0, m_store->value("caps/cpuThreads", 0).toInt());
    c.gpuMemoryFraction = std::clamp(m_store->value("caps/gpuMemoryFraction", 0.0).toDouble(), 0.0, 1.0);
    c.microBatchSize = std::max(0, m_store->value("caps/microBatchSize", 0).toInt());
    c.uploadBytesPerSecond = std::max(0.0, m_store->value("caps/uploadBytesPerSecond", 0.0).toDouble());
    c.downloadBytesPerSecond = std::max(0.0, m_store->value("caps/downloadBytesPerSecond", 0.0).toDouble());
    c.computeShare = std::clamp(m_store->value("caps/computeShare", 1.0).toDouble(), MinComputeShare, 1.0);
    if (m_store->contains("caps/gpus"))
        if (auto gpus = parseGpus(m_store->value("caps/gpus")))
            c.gpus = std::move(*gpus);
    return c;
}

void Settings::setCaps(const ResourceCaps &c)
{
    bool any = false;
    any |= store("caps/cpuThreads", c.cpuThreads);
    any |= store("caps/gpuMemoryFraction", c.gpuMemoryFraction);
    any |= store("caps/microBatchSize", c.microBatchSize);
    any |= store("caps/uploadBytesPerSecond", c.uploadBytesPerSecond);
    any |= store("caps/downloadBytesPerSecond", c.downloadBytesPerSecond);
    any |= store("caps/computeShare", c.computeShare > 0.0 ? std::clamp(c.computeShare, MinComputeShare, 1.0) : 1.0);
    any |= store("caps/gpus", formatGpus(c.gpus));
    if (any) {
        m_store->sync();
        Q_EMIT changed(); // one signal for the group
    }
}

AutoPauseRules Settings::pauseRules() const
{
    AutoPauseRules r;
    const auto &s = *m_store;
    r.pauseOnGpuGraphics = s.value("pause/onGpuGraphics", r.pauseOnGpuGraphics).toBool();
    for (const auto &app : s.value("pause/listedApplications").toStringList())
        if (!app.trimmed().isEmpty())
            r.listedApplications.push_back(app.trimmed().toStdString());
    r.pauseOnBattery = s.value("pause/onBattery", r.pauseOnBattery).toBool();
    r.scheduleEnabled = s.value("pause/scheduleEnabled", false).toBool();
    if (s.contains("pause/schedule")) {
        // Written by setPauseRules, so it parses; a hand-edited file that does not keeps no window.
        if (const auto parsed = parseWeeklySchedule(s.value("pause/schedule").toString().toStdString()); parsed.schedule)
            r.schedule = *parsed.schedule;
    } else if (s.contains("pause/scheduleStart")) { // the single daily window of earlier versions
        const int start = std::clamp(s.value("pause/scheduleStart", 0).toInt(), 0, 86399);
        const int end = std::clamp(s.value("pause/scheduleEnd", 0).toInt(), 0, 86399);
        r.schedule.windows = {ScheduleWindow{0x7f, start, end}};
    }
    r.pauseWhenUserActive = s.value("pause/whenUserActive", false).toBool();
    r.userIdleThresholdSeconds =
        std::max(0.0, s.value("pause/userIdleThreshold", r.userIdleThresholdSeconds).toDouble());
    r.quietPeriodSeconds = std::max(0.0, s.value("pause/quietPeriod", r.quietPeriodSeconds).toDouble());
    r.pauseOnFullScreen = s.value("pause/onFullScreen", r.pauseOnFullScreen).toBool();
    // A limit at or below its hysteresis would never clear: such a stored value reads as off.
    auto limit = [&](const char *key, HardwareLimit l) {
        const double v = s.value(QString::fromLatin1(key), 0.0).toDouble();
        const double hysteresis = std::max(0.0, s.value(QString::fromLatin1(key) + "Hysteresis", l.hysteresis).toDouble());
        return v > hysteresis ? HardwareLimit{v, hysteresis} : HardwareLimit{0.0, hysteresis};
    };
    r.gpuTemperature = limit("limits/gpuTemperature", r.gpuTemperature);
    r.cpuTemperature = limit("limits/cpuTemperature", r.cpuTemperature);
    r.gpuPower = limit("limits/gpuPower", r.gpuPower);
    r.fanSpeed = limit("limits/fanSpeed", r.fanSpeed);
    r.limitGraceSeconds = std::max(0.0, s.value("limits/graceSeconds", r.limitGraceSeconds).toDouble());
    return r;
}

void Settings::setPauseRules(const AutoPauseRules &r)
{
    QStringList apps;
    for (const auto &a : r.listedApplications)
        apps << QString::fromStdString(a);
    bool any = false;
    any |= store("pause/onGpuGraphics", r.pauseOnGpuGraphics);
    any |= store("pause/listedApplications", apps);
    any |= store("pause/onBattery", r.pauseOnBattery);
    any |= store("pause/scheduleEnabled", r.scheduleEnabled);
    any |= store("pause/schedule", QString::fromStdString(formatWeeklySchedule(r.schedule)));
    any |= store("pause/whenUserActive", r.pauseWhenUserActive);
    any |= store("pause/userIdleThreshold", r.userIdleThresholdSeconds);
    any |= store("pause/quietPeriod", r.quietPeriodSeconds);
    any |= store("pause/onFullScreen", r.pauseOnFullScreen);
    for (const auto &[key, l] : {std::pair{"limits/gpuTemperature", r.gpuTemperature}, std::pair{"limits/cpuTemperature", r.cpuTemperature},
                                 std::pair{"limits/gpuPower", r.gpuPower}, std::pair{"limits/fanSpeed", r.fanSpeed}}) {
        any |= store(QString::fromLatin1(key), l.limit);
        any |= store(QString::fromLatin1(key) + "Hysteresis", l.hysteresis);
    }
    any |= store("limits/graceSeconds", r.limitGraceSeconds);
    if (any) {
        m_store->sync();
        Q_EMIT changed();
    }
}

QString Settings::language() const
{
    const QString l = m_store->value("ui/language").toString();
    return l == QLatin1String("bn") || l == QLatin1String("en") ? l : QString();
}
void Settings::setLanguage(const QString &language)
{
    put("ui/language", language == QLatin1String("bn") || language == QLatin1String("en") ? language : QString());
}

bool Settings::notifications() const { return m_store->value("notify/enabled", true).toBool(); }
void Settings::setNotifications(bool on) { put("notify/enabled", on); }
bool Settings::milestoneNotifications() const { return m_store->value("notify/milestones", false).toBool(); }
void Settings::setMilestoneNotifications(bool on) { put("notify/milestones", on); }

int Settings::resumeTomorrowAt() const
{
    return std::clamp(m_store->value("pause/resumeTomorrowAt", 8 * 3600).toInt(), 0, 86399);
}

void Settings::setResumeTomorrowAt(int localSecondsOfDay)
{
    put("pause/resumeTomorrowAt", std::clamp(localSecondsOfDay, 0, 86399));
}

} // namespace dedloc::ui
