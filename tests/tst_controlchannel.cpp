// The control socket of a running dedloc (app/dedloc/ControlChannel.h), in one process: the
// server on this thread's event loop, clients on another thread (they block). A request reaches
// the handler and its answer comes back; malformed, oversized and silent clients get an error
// and never reach the handler; a second server on the same socket is refused, a stale socket
// file is replaced; the socket is the user's only; the path follows the data directory.
#include "ControlChannel.h"

#include <QLocalSocket>
#include <QTemporaryDir>
#include <QtTest>

#include <future>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace dedloc;

namespace {

// Runs `f` on another thread while this thread's event loop serves; returns its result.
template <typename F>
auto whileServing(F f)
{
    auto future = std::async(std::launch::async, std::move(f));
    if (!QTest::qWaitFor([&] { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }, 30000))
        qWarning("the client thread runs past 30 s");
    return future.get();
}

// What the server answers to raw `bytes` (then, unless `close` is false, the client's silence).
QByteArray rawExchange(const QString &path, const QByteArray &bytes)
{
    return whileServing([path, bytes] {
        QLocalSocket socket;
        socket.connectToServer(path);
        if (!socket.waitForConnected(2000))
            return QByteArray("not connected");
        socket.write(bytes);
        socket.flush();
        QByteArray reply;
        while (!reply.contains('\n') && socket.waitForReadyRead(8000))
            reply += socket.readAll();
        return reply;
    });
}

} // namespace

class TestControlChannel final : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_dir;
    std::vector<ControlRequest> m_seen;

    std::unique_ptr<ControlServer> makeServer()
    {
        return std::make_unique<ControlServer>([this](const ControlRequest &r) {
            m_seen.push_back(r);
            auto reply = controlOk();
            reply["echo"] = controlCommandName(r.command);
            return reply;
        });
    }

  private Q_SLOTS:
    void init() { m_seen.clear(); }

    void requestsReachTheHandlerAndTheAnswerComesBack()
    {
        const QString path = m_dir.filePath(QStringLiteral("a.sock"));
        auto server = makeServer();
        QString error;
        QVERIFY2(server->listen(path, &error), qPrintable(error));
        const auto reply = whileServing([&] {
            QString e;
            return sendControlRequest(path, {ControlCommand::Pause, 3600.0}, 5000, &e);
        });
        QVERIFY(reply.has_value());
        QCOMPARE(reply->at("ok").get<bool>(), true);
        QCOMPARE(reply->at("echo").get<std::string>(), std::string("pause"));
        QCOMPARE(m_seen.size(), std::size_t(1));
        QCOMPARE(int(m_seen[0].command), int(ControlCommand::Pause));
        QCOMPARE(m_seen[0].pauseSeconds, 3600.0);

        struct stat st{};
        QCOMPARE(::stat(QFile::encodeName(path).constData(), &st), 0);
        QVERIFY(S_ISSOCK(st.st_mode));
        QCOMPARE(st.st_mode & 077, 0u); // nobody else may pause or quit this volunteer's app
    }

    void badClientsGetAnErrorAndNeverReachTheHandler_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("says");
        QTest::newRow("not JSON") << QByteArray("quit now\n") << "one JSON object";
        QTest::newRow("unknown command") << QByteArray("{\"command\":\"rm\"}\n") << "unknown command";
        QTest::newRow("no newline, 70 000 bytes") << QByteArray(70000, 'x') << "longer than 65536 bytes";
        QTest::newRow("silent for 5 s") << QByteArray() << "no request line within 5 s";
    }

    void badClientsGetAnErrorAndNeverReachTheHandler()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, says);
        const QString path = m_dir.filePath(QStringLiteral("b.sock"));
        auto server = makeServer();
        QString error;
        QVERIFY2(server->listen(path, &error), qPrintable(error));
        const auto reply = nlohmann::json::parse(rawExchange(path, bytes).trimmed().toStdString(), nullptr, false);
        QVERIFY(reply.is_object());
        QCOMPARE(reply.value("ok", true), false);
        QVERIFY2(QString::fromStdString(reply.value("error", std::string())).contains(says), reply.dump().c_str());
        QVERIFY(m_seen.empty());
    }

    void aSecondAppIsRefusedAndAStaleSocketReplaced()
    {
        const QString path = m_dir.filePath(QStringLiteral("c.sock"));
        auto first = makeServer();
        QString error;
        QVERIFY2(first->listen(path, &error), qPrintable(error));
        auto second = makeServer();
        const bool secondListens = whileServing([&] { return second->listen(path, &error); });
        QVERIFY(!secondListens);
        QVERIFY2(error.contains(QStringLiteral("another dedloc already uses this data directory")), qPrintable(error));
        first.reset();

        // An app that died leaves its socket file behind: nobody answers there.
        const QString stale = m_dir.filePath(QStringLiteral("d.sock"));
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, QFile::encodeName(stale).constData(), sizeof address.sun_path - 1);
        QCOMPARE(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
        ::close(fd);
        QVERIFY(QFileInfo::exists(stale));
        auto third = makeServer();
        QVERIFY2(third->listen(stale, &error), qPrintable(error));
        const auto reply = whileServing([&] {
            QString e;
            return sendControlRequest(stale, {ControlCommand::Status, 0.0}, 5000, &e);
        });
        QVERIFY(reply.has_value() && reply->at("echo") == "status");
    }

    void nobodyThereIsAClearError()
    {
        QString error;
        QVERIFY(!sendControlRequest(m_dir.filePath(QStringLiteral("none.sock")), {}, 1000, &error).has_value());
        QVERIFY2(error.contains(QStringLiteral("no dedloc runs for this data directory")), qPrintable(error));
    }

    void thePathFollowsTheDataDirectory()
    {
        qputenv("XDG_RUNTIME_DIR", m_dir.path().toUtf8());
        QDir().mkpath(m_dir.filePath(QStringLiteral("data/x")));
        const QString a = controlSocketPath(m_dir.filePath(QStringLiteral("data/x")));
        QCOMPARE(controlSocketPath(m_dir.filePath(QStringLiteral("data/x/../x/."))), a); // the same directory
        QVERIFY(controlSocketPath(m_dir.filePath(QStringLiteral("data/y"))) != a);
        QVERIFY(a.startsWith(m_dir.path() + QStringLiteral("/dedloc-")) && a.endsWith(QStringLiteral(".sock")));
    }
};

QTEST_GUILESS_MAIN(TestControlChannel)
#include "tst_controlchannel.moc"
