#pragma once
// "Start DeDLOC when I log in": an XDG autostart entry (freedesktop.org Desktop Application
// Autostart Specification 0.5), the file <config>/autostart/dedloc.desktop, where <config> is
// $XDG_CONFIG_HOME (default ~/.config). GNOME, KDE, Xfce, Cinnamon, MATE and LXQt start what it
// names at login. The entry starts the app in the tray and joins (--in-tray --join): a login
// shows no window, and the volunteer who asked for it trains.
//
// The setting is the file itself (an entry with Hidden=true counts as off, as the spec says), so
// that removing it by hand or from the desktop's own startup settings is seen here.
// Errors: enable/disable return false and say why in `error` (an unwritable directory); the file
// is written atomically (QSaveFile). Threads: any, one call at a time.
#include <QString>

namespace dedloc::ui {

[[nodiscard]] QString loginAutostartFile();
[[nodiscard]] bool loginAutostartEnabled();
// Writes the entry starting `executable` (an absolute path; quoted as the Desktop Entry
// Specification's Exec key requires), or removes it.
bool setLoginAutostart(bool on, const QString &executable, QString *error);

} // namespace dedloc::ui
