#include "Format.h"

#include <QObject>

#include <QLocale>

#include <cmath>

static void initDedlocResources()
{
    Q_INIT_RESOURCE(dedloc);
    Q_INIT_RESOURCE(dedloc_ui_translations); // the compiled-in translations (ui/CMakeLists.txt)
}

namespace dedloc::ui {

void initUiResources()
{
    static const bool done = [] {
        initDedlocResources();
        return true;
    }();
    (void)done;
}

QString formatBytes(std::uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    return localDigits(u == 0 ? QStringLiteral("%1 B").arg(bytes)
                              : QStringLiteral("%1 %2").arg(v, 0, 'f', 1).arg(QLatin1String(units[u])));
}

QString formatNumber(double value, int decimals)
{
    return localDigits(QString::number(value, 'f', decimals));
}

QString localDigits(QString text)
{
    const QString zero = QLocale().zeroDigit();
    if (zero.size() != 1 || zero == QLatin1String("0"))
        return text;
    const char16_t base = zero.at(0).unicode();
    for (QChar &c : text)
        if (c >= QLatin1Char('0') && c <= QLatin1Char('9'))
            c = QChar(char16_t(base + (c.unicode() - u'0')));
    return text;
}

QString formatDuration(double seconds)
{
    if (!(seconds >= 0.0) || !std::isfinite(seconds))
        return QObject::tr("unknown");
    const auto s = static_cast<long long>(std::llround(seconds));
    if (s < 60)
        return localDigits(QObject::tr("%1 s").arg(s));
    if (s < 3600)
        return localDigits(QObject::tr("%1 min").arg(s / 60));
    if (s < 86400)
        return localDigits(QObject::tr("%1 h %2 min").arg(s / 3600).arg(s / 60 % 60, 2, 10, QLatin1Char('0')));
    return localDigits(QObject::tr("%1 d %2 h").arg(s / 86400).arg(s / 3600 % 24));
}

QString formatPeerCounts(const PeerSnapshot &s)
{
    const QString trainers = s.trainers == 1 ? QObject::tr("1 trainer") : QObject::tr("%1 trainers").arg(s.trainers);
    const QString monitors = s.monitors == 1 ? QObject::tr("1 monitor") : QObject::tr("%1 monitors").arg(s.monitors);
    QString counts = QObject::tr("%1, %2 auxiliary, %3 (%4 in client mode)")
                         .arg(trainers)
                         .arg(s.auxiliaries)
                         .arg(monitors)
                         .arg(s.clientModePeers);
    // Peers of the run on another version of its manifest train apart: named, never counted above.
    if (s.otherVersionPeers > 0)
        counts += QObject::tr("; %1 peers on another manifest version").arg(s.otherVersionPeers);
    return localDigits(counts);
}

QString formatCount(long long n)
{
    QString digits = QString::number(std::llabs(n));
    for (int i = int(digits.size()) - 3; i > 0; i -= 3)
        digits.insert(i, QChar(0x2009)); // thin space: readable in every locale
    return localDigits(n < 0 ? QStringLiteral("-") + digits : digits);
}

QString peerActivity(const SwarmPeerInfo &peer)
{
    if (peer.paused)
        return QObject::tr("paused");
    switch (peer.role) {
    case PeerRole::Trainer:
        return QObject::tr("training");
    case PeerRole::Auxiliary:
        return QObject::tr("averaging");
    case PeerRole::Monitor:
        return peer.averages ? QObject::tr("recording, reducing") : QObject::tr("recording");
    }
    return {};
}

QString stateTitle(PeerState state)
{
    switch (state) {
    case PeerState::Idle:
        return QObject::tr("Idle");
    case PeerState::Connecting:
        return QObject::tr("Connecting");
    case PeerState::Syncing:
        return QObject::tr("Syncing");
    case PeerState::Training:
        return QObject::tr("Training");
    case PeerState::Averaging:
        return QObject::tr("Averaging");
    case PeerState::Paused:
        return QObject::tr("Paused");
    case PeerState::Error:
        return QObject::tr("Error");
    case PeerState::Stopped:
        return QObject::tr("Stopped");
    }
    return QString::fromLatin1(peerStateName(state));
}

QString stateExplanation(const PeerSnapshot &s)
{
    const auto detail = QString::fromStdString(s.stateDetail);
    switch (s.state) {
    case PeerState::Idle:
        return QObject::tr("Not joined yet.");
    case PeerState::Connecting:
        return detail.isEmpty() ? QObject::tr("Looking for the swarm...")
                                : QObject::tr("Looking for the swarm: %1.").arg(detail);
    case PeerState::Syncing:
        return QObject::tr("Downloading the latest model state from another peer.");
    case PeerState::Training: {
        const QString computing = QObject::tr("Computing gradients on %1.").arg(QString::fromStdString(s.deviceName));
        if (s.reachability.empty())
            return computing;
        // First letter up: "Client mode: ...", "Reachable: ..." (the core's words, in English)
        QString reach = QString::fromStdString(s.reachability);
        reach[0] = reach[0].toUpper();
        //: %1: the sentence before ("Computing gradients on ..."), %2: how the peer is reached,
        //: in the core's English words ("Client mode: ...")
        return QObject::tr("%1 %2.").arg(computing, reach);
    }
    case PeerState::Averaging:
        return QObject::tr("Averaging gradients with the other peers.");
    case PeerState::Paused:
        return detail.isEmpty() ? QObject::tr("Paused.") : QObject::tr("Paused: %1.").arg(detail);
    case PeerState::Error:
        return detail.isEmpty() ? QObject::tr("Stopped by an error. See the log below; Resume tries again.")
                                : detail;
    case PeerState::Stopped:
        return QObject::tr("Left the swarm.");
    }
    return {};
}

QIcon stateIcon(PeerState state)
{
    initUiResources();
    if (state == PeerState::Idle || state == PeerState::Stopped)
        return appIcon();
    // The file names follow the core's English state names, whatever the window's language.
    const QString name = QString::fromLatin1(peerStateName(state)).toLower();
    return QIcon(QStringLiteral(":/dedloc/icons/state-%1.svg").arg(name));
}

QIcon appIcon()
{
    initUiResources();
    return QIcon(QStringLiteral(":/dedloc/icons/dedloc.svg"));
}

} // namespace dedloc::ui
