#include "ControlChannel.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLocalServer>
#include <QLocalSocket>
#include <QTimer>

#include <sys/stat.h>
#include <unistd.h>

namespace {

constexpr int ClientTimeoutMs = 5000;

QString runtimeDirectory()
{
    const QString xdg = qEnvironmentVariable("XDG_RUNTIME_DIR");
    if (!xdg.isEmpty() && QFileInfo(xdg).isDir())
        return xdg;
    const QString dir = QStringLiteral("/tmp/dedloc-%1").arg(::getuid());
    QDir().mkpath(dir);
    ::chmod(QFile::encodeName(dir).constData(), 0700);
    return dir;
}

void answer(QLocalSocket *socket, const nlohmann::json &reply)
{
    socket->write(QByteArray::fromStdString(reply.dump() + "\n"));
    socket->disconnectFromServer(); // after the bytes are written
}

} // namespace

QString controlSocketPath(const QString &dataDir)
{
    const QFileInfo info(dataDir);
    const QString canonical = info.exists() ? info.canonicalFilePath() : info.absoluteFilePath();
    const QByteArray hash = QCryptographicHash::hash(canonical.toUtf8(), QCryptographicHash::Sha256).toHex().left(16);
    return QDir(runtimeDirectory()).filePath(QStringLiteral("dedloc-%1.sock").arg(QString::fromLatin1(hash)));
}

ControlServer::ControlServer(Handler handler, QObject *parent)
    : QObject(parent), m_handler(std::move(handler)), m_server(new QLocalServer(this))
{
    m_server->setSocketOptions(QLocalServer::UserAccessOption);
    connect(m_server, &QLocalServer::newConnection, this, [this] {
        while (QLocalSocket *socket = m_server->nextPendingConnection())
            serve(socket);
    });
}

ControlServer::~ControlServer() = default;

bool ControlServer::listen(const QString &path, QString *error)
{
    QString probeError;
    if (sendControlRequest(path, {dedloc::ControlCommand::Status, 0.0}, 1000, &probeError)) {
        *error = QStringLiteral("another dedloc already uses this data directory (its control socket %1 answers)").arg(path);
        return false;
    }
    QLocalServer::removeServer(path); // a stale file of an app that died
    if (!m_server->listen(path)) {
        *error = QStringLiteral("cannot listen on %1: %2").arg(path, m_server->errorString());
        return false;
    }
    return true;
}

void ControlServer::serve(QLocalSocket *socket)
{
    connect(socket, &QLocalSocket::disconnected, socket, &QObject::deleteLater);
    auto *deadline = new QTimer(socket);
    deadline->setSingleShot(true);
    connect(deadline, &QTimer::timeout, socket, [socket] {
        answer(socket, dedloc::controlError("no request line within 5 s"));
    });
    deadline->start(ClientTimeoutMs);
    connect(socket, &QLocalSocket::readyRead, socket, [this, socket, deadline] {
        if (!deadline->isActive())
            return; // answered already
        if (!socket->canReadLine()) {
            if (socket->bytesAvailable() > qint64(dedloc::MaxControlLineBytes)) {
                deadline->stop();
                answer(socket, dedloc::controlError("request longer than 65536 bytes"));
            }
            return;
        }
        deadline->stop();
        const QByteArray line = socket->readLine(qint64(dedloc::MaxControlLineBytes) + 2).trimmed();
        const auto parsed = dedloc::parseControlRequest(line.toStdString());
        answer(socket, parsed.request ? m_handler(*parsed.request) : dedloc::controlError(parsed.error));
    });
}

std::optional<nlohmann::json> sendControlRequest(const QString &path, const dedloc::ControlRequest &request,
                                                 int timeoutMs, QString *error)
{
    QElapsedTimer clock;
    clock.start();
    QLocalSocket socket;
    socket.connectToServer(path);
    if (!socket.waitForConnected(timeoutMs)) {
        *error = socket.error() == QLocalSocket::ServerNotFoundError || socket.error() == QLocalSocket::ConnectionRefusedError
                     ? QStringLiteral("no dedloc runs for this data directory (nothing answers at %1)").arg(path)
                     : QStringLiteral("cannot reach the app at %1: %2").arg(path, socket.errorString());
        return std::nullopt;
    }
    socket.write(QByteArray::fromStdString(dedloc::controlRequestLine(request) + "\n"));
    socket.flush();
    QByteArray reply;
    while (!reply.contains('\n') && reply.size() <= qint64(dedloc::MaxControlLineBytes)) {
        const int left = timeoutMs - int(clock.elapsed());
        if (left <= 0 || !socket.waitForReadyRead(left))
            break;
        reply += socket.readAll();
    }
    reply += socket.readAll();
    const auto j = nlohmann::json::parse(reply.trimmed().toStdString(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("ok")) {
        *error = reply.isEmpty() ? QStringLiteral("the app at %1 did not answer within %2 ms").arg(path).arg(timeoutMs)
                                 : QStringLiteral("the app at %1 answered something else than a control answer").arg(path);
        return std::nullopt;
    }
    return j;
}
