// The endpoints a peer behind a port forward advertises (core/net/Announce.h).
#include "net/Announce.h"
#include "util/Error.h"

#include <QtTest>

using namespace dedloc;

class TestAnnounce final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void hostAloneKeepsTheBoundPorts()
    {
        const auto e = announcedEndpoints("203.0.113.7", "tcp://0.0.0.0:41000", "tcp://0.0.0.0:41007");
        QCOMPARE(e.allReduce, std::string("tcp://203.0.113.7:41000"));
        QCOMPARE(e.service, std::string("tcp://203.0.113.7:41007"));
    }

    void aPortNamesTheForwardedPair()
    {
        const auto e =
            announcedEndpoints("home.example.org:5000", "tcp://192.168.1.20:41000", "tcp://192.168.1.20:41001");
        QCOMPARE(e.allReduce, std::string("tcp://home.example.org:5000"));
        QCOMPARE(e.service, std::string("tcp://home.example.org:5001"));
    }

    void refusals_data()
    {
        QTest::addColumn<QString>("announce");
        for (const char *bad : {"", ":5000", "0.0.0.0", "*:5000", "0.0.0.0:5000", "host:", "host:0", "host:65535",
                                "host:70000", "host:12a", "host:-1", "ho st", "tcp://host:5000", "host:1234567", "40000",
                                "1.2.3:5000", "300.1.1.1"})
            QTest::newRow(bad) << QString::fromLatin1(bad);
    }

    void refusals()
    {
        QFETCH(QString, announce);
        try {
            (void)announcedEndpoints(announce.toStdString(), "tcp://0.0.0.0:41000", "tcp://0.0.0.0:41001");
            QFAIL("accepted");
        } catch (const Error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).startsWith(QStringLiteral("--announce")), e.what());
        }
    }

    void partsOfAnEndpoint()
    {
        QCOMPARE(endpointPort("tcp://203.0.113.7:40001"), 40001L);
        QCOMPARE(endpointPort("home.example.org:5"), 5L);
        QCOMPARE(endpointPort("tcp://10.0.0.5:*"), -1L);
        QCOMPARE(endpointPort("tcp://nohost"), -1L);
        QCOMPARE(endpointHost("tcp://203.0.113.7:40001"), std::string("203.0.113.7"));
        QCOMPARE(endpointHost("tcp://home.example.org:5"), std::string("home.example.org"));
        QCOMPARE(endpointHost("ipc:///tmp/x"), std::string());
        QCOMPARE(endpointHost("tcp://nohost"), std::string());
    }

    void boundSocketsWithoutPortsNeedAnAnnouncedPort()
    {
        QVERIFY_THROWS_EXCEPTION(Error, (void)announcedEndpoints("203.0.113.7", "", ""));
        QCOMPARE(announcedEndpoints("203.0.113.7:6000", "", "").service, std::string("tcp://203.0.113.7:6001"));
    }
};

QTEST_GUILESS_MAIN(TestAnnounce)
#include "tst_announce.moc"
