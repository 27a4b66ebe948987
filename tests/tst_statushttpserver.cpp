// The read-only status endpoint (monitor/StatusHttpServer.h) with real requests on
// 127.0.0.1: the published JSON with 200, 503 before the first publish, 404 for other paths,
// 405 for other methods, bodies, long request lines, header floods and garbage refused, a
// stalled client that blocks neither other clients nor the publisher, and a port in use
// reported as an error.
#include "monitor/StatusHttpServer.h"
#include "util/Error.h"

#include "HttpProbe.h"
#include "TestSupport.h"

#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

using namespace dedloc;
using namespace dedloc::test;

namespace {

StatusHttpOptions options()
{
    StatusHttpOptions o;
    o.paths = {"/status", "/peers"};
    return o;
}

} // namespace

class TestStatusHttpServer : public QObject {
    Q_OBJECT
  private Q_SLOTS:
    void servesThePublishedDocument()
    {
        StatusHttpServer server(options());
        QVERIFY(server.port() != 0);
        auto r = httpGet(server.port(), "/status");
        QCOMPARE(r.status, 503); // nothing published yet
        QCOMPARE(QString::fromStdString(r.headers["content-type"]), QStringLiteral("application/json"));

        server.publish("/status", R"({"schema":"dedloc-status/1","swarm":{"global_epoch":7}})");
        server.publish("/peers", R"({"peers":[]})");
        server.publish("/other", R"({"x":1})"); // not a served path: ignored
        r = httpGet(server.port(), "/status");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, std::string(R"({"schema":"dedloc-status/1","swarm":{"global_epoch":7}})"));
        QCOMPARE(QString::fromStdString(r.headers["content-type"]), QStringLiteral("application/json"));
        QCOMPARE(QString::fromStdString(r.headers["cache-control"]), QStringLiteral("no-store"));
        QCOMPARE(httpGet(server.port(), "/peers").body, std::string(R"({"peers":[]})"));
        // The query string does not change the path.
        QCOMPARE(httpGet(server.port(), "/status?pretty=1").status, 200);

        server.publish("/status", R"({"swarm":{"global_epoch":8}})");
        QCOMPARE(httpGet(server.port(), "/status").body, std::string(R"({"swarm":{"global_epoch":8}})"));

        const auto head = httpExchange(server.port(), "HEAD /status HTTP/1.1\r\nHost: x\r\n\r\n");
        QCOMPARE(head.status, 200);
        QVERIFY(head.body.empty());
    }

    void everythingElseIsRefused()
    {
        StatusHttpServer server(options());
        server.publish("/status", "{}");
        const auto port = server.port();

        auto r = httpGet(port, "/other");
        QCOMPARE(r.status, 404);
        QCOMPARE(r.body, std::string(R"({"error":"not found"})"));
        QCOMPARE(httpGet(port, "/").status, 404);
        QCOMPARE(httpGet(port, "/status/../etc/passwd").status, 404);
        QCOMPARE(httpGet(port, "/other").status, 404);

        for (const char *method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
            r = httpExchange(port, std::string(method) + " /status HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
            QVERIFY2(r.status == 405, method);
            QCOMPARE(QString::fromStdString(r.headers["allow"]), QStringLiteral("GET, HEAD"));
        }

        // A body is refused before it is read: the reply comes although the body never does.
        r = httpExchange(port, "POST /status HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n", 5.0);
        QCOMPARE(r.status, 413);
        QVERIFY2(r.seconds < 3.0, "the server waited for a body it should refuse");
        r = httpExchange(port, "GET /status HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 5.0);
        QCOMPARE(r.status, 413);

        // A request line past 8 KiB.
        QCOMPARE(httpGet(port, "/status?" + std::string(9000, 'a')).status, 414);
        // Headers past 16 KiB in total (each line short).
        std::string flood = "GET /status HTTP/1.1\r\nHost: x\r\n";
        for (int i = 0; i < 300; ++i)
            flood += "X-Filler-" + std::to_string(i) + ": " + std::string(100, 'b') + "\r\n";
        QCOMPARE(httpExchange(port, flood + "\r\n").status, 431);
        // Garbage.
        QCOMPARE(httpExchange(port, "HELLO THERE\r\n\r\n").status, 400);
        QCOMPARE(httpExchange(port, "GET /status\r\n\r\n").status, 400);

        // Still serving after all that.
        QCOMPARE(httpGet(port, "/status").status, 200);
    }

    void aStalledClientBlocksNobody()
    {
        StatusHttpOptions o = options();
        o.timeoutSeconds = 1.0;
        StatusHttpServer server(o);
        server.publish("/status", R"({"n":1})");
        // A client that connects and sends half a request, then nothing.
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(server.port());
        QCOMPARE(::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        const std::string half = "GET /status HTTP/1.1\r\nHo";
        QVERIFY(::send(fd, half.data(), half.size(), 0) > 0);

        const auto t0 = std::chrono::steady_clock::now();
        server.publish("/status", R"({"n":2})"); // the publisher never waits for clients
        QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50));
        const auto r = httpGet(server.port(), "/status", 5.0);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, std::string(R"({"n":2})"));
        QVERIFY2(r.seconds < 0.9, "another client waited for the stalled one");
        ::close(fd);
    }

    void portInUseIsAnError()
    {
        StatusHttpServer first(options());
        auto o = options();
        o.port = first.port();
        QVERIFY(errorOf([&] { StatusHttpServer second(o); }).contains(QStringLiteral("cannot listen")));
        o.host = "192.0.2.1"; // TEST-NET-1: not an address of this machine
        o.port = 0;
        QVERIFY(errorOf([&] { StatusHttpServer third(o); }).contains(QStringLiteral("cannot listen")));
    }

    void stopsAtOnce()
    {
        const auto t0 = std::chrono::steady_clock::now();
        {
            StatusHttpServer server(options());
        }
        QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
    }
};

QTEST_GUILESS_MAIN(TestStatusHttpServer)
#include "tst_statushttpserver.moc"
