#include "FullScreenProbe.h"

#include <xcb/xcb.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <unistd.h>

namespace dedloc::ui {
namespace {

constexpr double ReconnectSeconds = 30.0;

double monotonicSeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A property's reply, freed with the reply.
using PropertyReply = std::unique_ptr<xcb_get_property_reply_t, decltype(&std::free)>;

PropertyReply property(xcb_connection_t *c, xcb_window_t window, xcb_atom_t name, xcb_atom_t type, std::uint32_t longs)
{
    auto cookie = xcb_get_property(c, 0, window, name, type, 0, longs);
    return {xcb_get_property_reply(c, cookie, nullptr), &std::free};
}

} // namespace

struct FullScreenProbe::X11 {
    xcb_connection_t *connection = nullptr;
    xcb_window_t root = 0;
    xcb_atom_t activeWindow = 0, wmState = 0, fullScreen = 0, wmPid = 0;

    ~X11()
    {
        if (connection)
            xcb_disconnect(connection);
    }

    xcb_atom_t atom(const char *name) const
    {
        auto cookie = xcb_intern_atom(connection, 0, std::uint16_t(std::strlen(name)), name);
        std::unique_ptr<xcb_intern_atom_reply_t, decltype(&std::free)> reply(
            xcb_intern_atom_reply(connection, cookie, nullptr), &std::free);
        return reply ? reply->atom : xcb_atom_t(XCB_ATOM_NONE);
    }

    bool open(const std::string &display)
    {
        int screenNumber = 0;
        connection = xcb_connect(display.empty() ? nullptr : display.c_str(), &screenNumber);
        if (xcb_connection_has_error(connection))
            return false;
        auto it = xcb_setup_roots_iterator(xcb_get_setup(connection));
        for (int i = 0; i < screenNumber && it.rem > 0; ++i)
            xcb_screen_next(&it);
        if (it.rem <= 0)
            return false;
        root = it.data->root;
        activeWindow = atom("_NET_ACTIVE_WINDOW");
        wmState = atom("_NET_WM_STATE");
        fullScreen = atom("_NET_WM_STATE_FULLSCREEN");
        wmPid = atom("_NET_WM_PID");
        return activeWindow && wmState && fullScreen && wmPid;
    }
};

FullScreenProbe::FullScreenProbe(std::string display, unsigned ownPid)
    : m_display(std::move(display)), m_ownPid(ownPid ? ownPid : unsigned(::getpid()))
{
    connect();
}

FullScreenProbe::~FullScreenProbe() = default;

void FullScreenProbe::connect()
{
    m_lastAttempt = monotonicSeconds();
    m_x.reset();
    if (m_display.empty() && !std::getenv("DISPLAY"))
        return; // no X11 here (a Wayland-only session or a server)
    auto x = std::make_unique<X11>();
    if (x->open(m_display))
        m_x = std::move(x);
}

bool FullScreenProbe::connected() const { return m_x != nullptr; }

std::string FullScreenProbe::fullScreenProgram()
{
    if (m_x && xcb_connection_has_error(m_x->connection))
        m_x.reset();
    if (!m_x) {
        if (monotonicSeconds() - m_lastAttempt < ReconnectSeconds)
            return {};
        connect();
        if (!m_x)
            return {};
    }
    auto *c = m_x->connection;
    const auto active = property(c, m_x->root, m_x->activeWindow, XCB_ATOM_WINDOW, 1);
    if (!active || active->format != 32 || xcb_get_property_value_length(active.get()) < 4)
        return {};
    const xcb_window_t window = *static_cast<const xcb_window_t *>(xcb_get_property_value(active.get()));
    if (window == XCB_WINDOW_NONE)
        return {};
    const auto state = property(c, window, m_x->wmState, XCB_ATOM_ATOM, 64);
    if (!state || state->format != 32)
        return {};
    const auto *atoms = static_cast<const xcb_atom_t *>(xcb_get_property_value(state.get()));
    const int count = xcb_get_property_value_length(state.get()) / 4;
    bool full = false;
    for (int i = 0; i < count && !full; ++i)
        full = atoms[i] == m_x->fullScreen;
    if (!full)
        return {};
    const auto pid = property(c, window, m_x->wmPid, XCB_ATOM_CARDINAL, 1);
    unsigned owner = 0;
    if (pid && pid->format == 32 && xcb_get_property_value_length(pid.get()) >= 4)
        owner = *static_cast<const std::uint32_t *>(xcb_get_property_value(pid.get()));
    if (owner == m_ownPid)
        return {}; // our own window full screen is not a reason to pause
    // WM_CLASS: "instance\0class\0"; the class names the program ("mpv", "Steam").
    const auto wmClass = property(c, window, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 64);
    if (wmClass && wmClass->format == 8) {
        const auto *text = static_cast<const char *>(xcb_get_property_value(wmClass.get()));
        const std::string both(text, std::size_t(xcb_get_property_value_length(wmClass.get())));
        const auto split = both.find('\0');
        std::string name = split == std::string::npos ? both : both.substr(split + 1);
        if (const auto end = name.find('\0'); end != std::string::npos)
            name.resize(end);
        if (name.empty())
            name = both.substr(0, split);
        if (!name.empty())
            return name;
    }
    if (owner) {
        std::string comm;
        std::getline(std::ifstream("/proc/" + std::to_string(owner) + "/comm"), comm);
        if (!comm.empty())
            return comm;
    }
    return "a program";
}

} // namespace dedloc::ui
