// The full-screen probe (ui/FullScreenProbe.h) against a real X server (Xvfb, started here on a
// display of its own). The test plays the window manager's part of EWMH: it makes windows, marks
// one active on the root window and sets or clears its _NET_WM_STATE_FULLSCREEN, as a window
// manager does when a game or a film goes full screen. The probe names the program by WM_CLASS,
// ignores windows that are not full screen or not active, and the app's own windows.
#include "FullScreenProbe.h"

#include <QProcess>
#include <QStandardPaths>
#include <QtTest>

#include <xcb/xcb.h>

#include <cstring>

#include <unistd.h>

using namespace dedloc::ui;

class TestFullScreenProbe final : public QObject {
    Q_OBJECT

  private:
    QProcess m_xvfb;
    std::string m_display;
    xcb_connection_t *m_c = nullptr;
    xcb_window_t m_root = 0;

    xcb_atom_t atom(const char *name)
    {
        auto *reply = xcb_intern_atom_reply(m_c, xcb_intern_atom(m_c, 0, std::uint16_t(std::strlen(name)), name), nullptr);
        const xcb_atom_t a = reply ? reply->atom : xcb_atom_t(XCB_ATOM_NONE);
        std::free(reply);
        return a;
    }
    xcb_window_t window(const char *wmClass, std::size_t wmClassBytes, std::uint32_t pid)
    {
        const xcb_window_t w = xcb_generate_id(m_c);
        xcb_create_window(m_c, XCB_COPY_FROM_PARENT, w, m_root, 0, 0, 640, 480, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                          XCB_COPY_FROM_PARENT, 0, nullptr);
        if (wmClassBytes)
            xcb_change_property(m_c, XCB_PROP_MODE_REPLACE, w, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 8, std::uint32_t(wmClassBytes), wmClass);
        xcb_change_property(m_c, XCB_PROP_MODE_REPLACE, w, atom("_NET_WM_PID"), XCB_ATOM_CARDINAL, 32, 1, &pid);
        xcb_aux_sync();
        return w;
    }
    void setFullScreen(xcb_window_t w, bool on)
    {
        const xcb_atom_t states[] = {atom("_NET_WM_STATE_ABOVE"), atom("_NET_WM_STATE_FULLSCREEN")};
        xcb_change_property(m_c, XCB_PROP_MODE_REPLACE, w, atom("_NET_WM_STATE"), XCB_ATOM_ATOM, 32, on ? 2 : 1, states);
        xcb_aux_sync(); // done before the probe, on its own connection, asks
    }
    void activate(xcb_window_t w)
    {
        xcb_change_property(m_c, XCB_PROP_MODE_REPLACE, m_root, atom("_NET_ACTIVE_WINDOW"), XCB_ATOM_WINDOW, 32, 1, &w);
        xcb_flush(m_c);
        xcb_aux_sync();
    }
    void xcb_aux_sync() { std::free(xcb_get_input_focus_reply(m_c, xcb_get_input_focus(m_c), nullptr)); }

  private Q_SLOTS:
    void initTestCase()
    {
        const QString xvfb = QStandardPaths::findExecutable(QStringLiteral("Xvfb"));
        if (xvfb.isEmpty())
            QSKIP("Xvfb is not installed (installers/install-deps.sh installs it)");
        // -displayfd: Xvfb picks a free display and writes its number to stdout when ready.
        m_xvfb.start(xvfb, {QStringLiteral("-displayfd"), QStringLiteral("1"), QStringLiteral("-nolisten"), QStringLiteral("tcp")});
        QVERIFY(m_xvfb.waitForStarted(10000));
        QByteArray number;
        QVERIFY2(QTest::qWaitFor([&] { number += m_xvfb.readAllStandardOutput(); return number.contains('\n'); }, 20000),
                 m_xvfb.readAllStandardError().constData());
        m_display = (QStringLiteral(":") + QString::fromLatin1(number.trimmed())).toStdString();
        m_c = xcb_connect(m_display.c_str(), nullptr);
        QVERIFY(!xcb_connection_has_error(m_c));
        m_root = xcb_setup_roots_iterator(xcb_get_setup(m_c)).data->root;
    }

    void cleanupTestCase()
    {
        if (m_c)
            xcb_disconnect(m_c);
        m_xvfb.terminate();
        m_xvfb.waitForFinished(5000);
    }

    void followsTheActiveWindowsFullScreenState()
    {
        const unsigned me = unsigned(::getpid());
        FullScreenProbe probe(m_display, me);
        QVERIFY(probe.connected());
        QCOMPARE(probe.fullScreenProgram(), std::string()); // no window manager has said anything yet

        static const char mpvClass[] = "gl\0mpv"; // instance "gl", class "mpv"
        const auto film = window(mpvClass, sizeof mpvClass, 4242);
        const auto editor = window("gedit\0Gedit", 12, 4343);
        activate(film);
        QCOMPARE(probe.fullScreenProgram(), std::string()); // active, not full screen
        setFullScreen(film, true);
        QCOMPARE(probe.fullScreenProgram(), std::string("mpv"));
        activate(editor); // the volunteer switched away: the film is full screen but behind
        QCOMPARE(probe.fullScreenProgram(), std::string());
        activate(film);
        QCOMPARE(probe.fullScreenProgram(), std::string("mpv"));
        setFullScreen(film, false); // the film left full screen
        QCOMPARE(probe.fullScreenProgram(), std::string());

        const auto ours = window("dedloc\0dedloc", 14, me); // this app's own window never counts
        setFullScreen(ours, true);
        activate(ours);
        QCOMPARE(probe.fullScreenProgram(), std::string());

        const auto nameless = window(nullptr, 0, 0); // no WM_CLASS, no pid: still a reason
        setFullScreen(nameless, true);
        activate(nameless);
        QCOMPARE(probe.fullScreenProgram(), std::string("a program"));

        xcb_destroy_window(m_c, nameless); // gone while still named active
        xcb_aux_sync();
        QCOMPARE(probe.fullScreenProgram(), std::string());
    }

    void noDisplayMeansNothingFullScreen()
    {
        FullScreenProbe probe(":4097", 0); // no server there
        QVERIFY(!probe.connected());
        QCOMPARE(probe.fullScreenProgram(), std::string());
    }
};

QTEST_GUILESS_MAIN(TestFullScreenProbe)
#include "tst_fullscreenprobe.moc"
