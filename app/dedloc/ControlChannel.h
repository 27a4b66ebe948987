#pragma once
// The local control socket of a running `dedloc` (the protocol: face/ControlProtocol.h). One
// socket per data directory, so one app per volunteer (the default data directory) and tests
// with their own directories never meet: $XDG_RUNTIME_DIR/dedloc-<16 hex of the directory's
// hash>.sock (else /tmp/dedloc-<uid>/, made 0700). The socket file is the user's only (0600).
//
// Server: answers each connection's one request line with one answer line, then closes it. A
// client that sends more than MaxControlLineBytes without a newline, or nothing within 5 s, gets
// an error answer and is dropped; the app's event loop never waits on a client.
// Client: connect, send, wait for the answer (bounded), return it.
//
// Threads: the server lives on the thread of its event loop (the GUI thread in the window; the
// headless loop calls QCoreApplication::processEvents()). The client blocks its caller.
#include "face/ControlProtocol.h"

#include <QObject>
#include <QString>

#include <functional>
#include <optional>

class QLocalServer;
class QLocalSocket;

// The socket of the app using `dataDir` (made absolute and canonical where it exists).
[[nodiscard]] QString controlSocketPath(const QString &dataDir);

class ControlServer final : public QObject {
public:
    // Returns the answer to a well-formed request (an object with "ok"). Runs on the server's
    // thread; for Quit, answer first and act later (a queued call), so the client hears back.
    using Handler = std::function<nlohmann::json(const dedloc::ControlRequest &)>;

    explicit ControlServer(Handler handler, QObject *parent = nullptr);
    ~ControlServer() override;

    // Listens at `path`, replacing a stale socket file (one nobody answers on). Returns false
    // with `error` set when another app answers there or the socket cannot be made.
    bool listen(const QString &path, QString *error);

private:
    void serve(QLocalSocket *socket);

    Handler m_handler;
    QLocalServer *m_server;
};

// Sends `request` to the app at `path` and returns its answer, or nullopt with `error` set (no
// app there, no answer within `timeoutMs`, an answer that is not a JSON object).
[[nodiscard]] std::optional<nlohmann::json> sendControlRequest(const QString &path, const dedloc::ControlRequest &request,
                                                               int timeoutMs, QString *error);
