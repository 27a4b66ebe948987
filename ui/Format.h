#pragma once
// Human-readable numbers for the panels: bytes (binary units), durations, counts, state names.
#include "face/PeerStatus.h"

#include <QIcon>
#include <QString>

#include <cstdint>

namespace dedloc::ui {

// Every number below is written with the digits of the window's locale (QLocale(), set by
// Language.h: ০-৯ in Bengali, 0-9 in English); separators stay as shown (thin space, '.').
[[nodiscard]] QString formatBytes(std::uint64_t bytes); // "3.0 GiB", "512 KiB", "17 B"
[[nodiscard]] QString formatDuration(double seconds);   // "45 s", "12 min", "3 h 05 min", "2 d 4 h"; < 0: "unknown"
[[nodiscard]] QString formatCount(long long n);         // "1 234 567"
[[nodiscard]] QString formatNumber(double value, int decimals); // "12.5" ('f' format)
// `text` with its ASCII digits 0-9 written in the digits of QLocale() (the same text where those
// are 0-9): for times of day and numbers made elsewhere.
[[nodiscard]] QString localDigits(QString text);
// The swarm's live peers by role, singular where one: "1 trainer, 0 auxiliary, 1 monitor (0 in
// client mode)", "3 trainers, 1 auxiliary, 2 monitors (1 in client mode)".
[[nodiscard]] QString formatPeerCounts(const PeerSnapshot &s);
// What a peer of the swarm does, for the peers table: "paused", "training" (trainers),
// "averaging" (auxiliary peers), "recording" or "recording, reducing" (monitors).
[[nodiscard]] QString peerActivity(const SwarmPeerInfo &peer);
// The state as the volunteer reads it ("Training", "Paused", ...), and one line of explanation,
// in the window's language (Language.h); details that come from the core stay in its English words.
[[nodiscard]] QString stateTitle(PeerState state);
[[nodiscard]] QString stateExplanation(const PeerSnapshot &s);
// The icon of a state, from the compiled-in SVGs (resources/icons/state-*.svg); the app icon for Idle.
[[nodiscard]] QIcon stateIcon(PeerState state);
[[nodiscard]] QIcon appIcon();
// Registers the compiled-in resources of the static library (Q_INIT_RESOURCE); idempotent.
void initUiResources();

} // namespace dedloc::ui
