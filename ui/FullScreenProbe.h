#pragma once
// Whether a program shows full screen in front of the volunteer (a game, a film): auto-pause
// rule 4 (system/AutoPausePolicy.h) without listing each program.
//
// Source: the X11 server of $DISPLAY (also Xwayland, for X11 programs on a Wayland desktop),
// through its window manager's Extended Window Manager Hints (freedesktop.org EWMH 1.5): the
// root window's _NET_ACTIVE_WINDOW, and that window's _NET_WM_STATE holding
// _NET_WM_STATE_FULLSCREEN. The program is named by the window's WM_CLASS class (ICCCM 4.1.2.5),
// else by /proc/<_NET_WM_PID>/comm, else "a program". This app's own windows (_NET_WM_PID ==
// `ownPid`) never count. Native Wayland windows are invisible to X11: there, only the other
// rules apply.
//
// Errors: no display, no window manager or a window that vanished between two requests read as
// "nothing full screen"; a lost connection is retried at most every 30 s. Never throws.
// Threads: one thread at a time (the GUI thread's probe tick); each call makes four round trips
// to the X server, well under a millisecond locally.
#include <memory>
#include <string>

namespace dedloc::ui {

class FullScreenProbe final {
  public:
    // `display`: an X11 display name; "" means $DISPLAY. `ownPid` 0: getpid().
    explicit FullScreenProbe(std::string display = {}, unsigned ownPid = 0);
    ~FullScreenProbe();
    FullScreenProbe(const FullScreenProbe &) = delete;
    FullScreenProbe &operator=(const FullScreenProbe &) = delete;

    [[nodiscard]] bool connected() const;
    // The full-screen program in front, or "" (none, or not known here).
    [[nodiscard]] std::string fullScreenProgram();

  private:
    struct X11;
    void connect();

    std::string m_display;
    unsigned m_ownPid;
    std::unique_ptr<X11> m_x;
    double m_lastAttempt = -1e9;
};

} // namespace dedloc::ui
