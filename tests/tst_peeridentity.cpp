// Peer identity (core/net/PeerIdentity.h): persisted Ed25519 key, derived id, signatures.
#include "net/PeerIdentity.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include <QTemporaryDir>
#include <QtTest>

#include <sodium.h>

using namespace dedloc;

class TestPeerIdentity final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void keyPersistsAndIdIsStable()
    {
        QTemporaryDir dir;
        const auto file = std::filesystem::path(dir.path().toStdString()) / "sub" / "identity.key";
        const auto a = PeerIdentity::loadOrCreate(file);
        const auto b = PeerIdentity::loadOrCreate(file);
        QCOMPARE(a.peerId(), b.peerId());
        QCOMPARE(a.peerId().size(), std::size_t{32});
        QVERIFY(a.publicKey() == b.publicKey());
        const auto perms = std::filesystem::status(file).permissions();
        QCOMPARE(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
                 std::filesystem::perms::none);
    }

    void peerIdIsBlake2bOfThePublicKey()
    {
        const auto id = PeerIdentity::generate();
        unsigned char digest[32];
        crypto_generichash(digest, sizeof digest, id.publicKey().data(), id.publicKey().size(), nullptr, 0);
        char hex[65];
        sodium_bin2hex(hex, sizeof hex, digest, 16);
        QCOMPARE(id.peerId(), std::string(hex));
        QVERIFY(id.peerId() != PeerIdentity::generate().peerId());
    }

    void signaturesVerifyOnlyForTheSignedMessageAndKey()
    {
        const auto a = PeerIdentity::generate();
        const auto b = PeerIdentity::generate();
        const auto sig = a.sign("progress epoch=3");
        QCOMPARE(sig.size(), std::size_t{64});
        QVERIFY(PeerIdentity::verify(a.publicKey(), "progress epoch=3", sig));
        QVERIFY(!PeerIdentity::verify(a.publicKey(), "progress epoch=4", sig));
        QVERIFY(!PeerIdentity::verify(b.publicKey(), "progress epoch=3", sig));
        QVERIFY(!PeerIdentity::verify(a.publicKey(), "progress epoch=3", sig.substr(1)));
    }

    void malformedKeyFileIsRefusedNotOverwritten()
    {
        QTemporaryDir dir;
        const auto file = std::filesystem::path(dir.path().toStdString()) / "identity.key";
        writeFileAtomically(file, "short");
        QVERIFY_THROWS_EXCEPTION(Error, PeerIdentity::loadOrCreate(file));
        QCOMPARE(readWholeFile(file), std::string("short"));
    }
};

QTEST_APPLESS_MAIN(TestPeerIdentity)
#include "tst_peeridentity.moc"
