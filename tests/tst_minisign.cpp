// minisign formats (core/security/Minisign.h): keys, signatures, refusals, interop with the
// `minisign` binary in both directions.
#include "security/Minisign.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <sodium.h>

using namespace dedloc;
namespace ms = dedloc::minisign;

namespace {

std::filesystem::path p(const QTemporaryDir &d, const char *name)
{
    return std::filesystem::path(d.path().toStdString()) / name;
}

// Runs minisign with `input` on stdin; returns {exit code, stdout+stderr}.
std::pair<int, QString> runMinisign(const QStringList &args, const QByteArray &input = {})
{
    QProcess proc;
    proc.setProcessChannelMode(QProcess::MergedChannels);
    proc.start(QStringLiteral("minisign"), args);
    proc.waitForStarted();
    proc.write(input);
    proc.closeWriteChannel();
    proc.waitForFinished(120000);
    return {proc.exitStatus() == QProcess::NormalExit ? proc.exitCode() : -1, QString::fromUtf8(proc.readAll())};
}

QString q(const std::filesystem::path &path)
{
    return QString::fromStdString(path.string());
}

} // namespace

class TestMinisign final : public QObject {
    Q_OBJECT

  private:
    bool m_haveMinisign = false;

  private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(sodium_init() >= 0);
        m_haveMinisign = !QStandardPaths::findExecutable(QStringLiteral("minisign")).isEmpty();
    }

    void roundTripAndTrustedComment()
    {
        const auto pair = ms::generateKeyPair();
        const std::string content = "manifest bytes\n";
        const auto sig = ms::sign(pair.secretKey, content, "run demo epoch 0", "made by a test");
        const auto v = ms::verify(pair.publicKey, content, sig, "sig");
        QCOMPARE(v.trustedComment, std::string("run demo epoch 0"));
        QCOMPARE(v.untrustedComment, std::string("made by a test"));
        QVERIFY(v.prehashed);
        QCOMPARE(v.keyIdHex(), pair.publicKey.keyIdHex());
        QCOMPARE(sig.substr(0, 35), std::string("untrusted comment: made by a test\nR"));
    }

    void keyIdHexIsLittleEndian()
    {
        ms::PublicKey k;
        k.keyId = {0x7e, 0x34, 0x99, 0x83, 0xa1, 0x71, 0x5a, 0xca};
        QCOMPARE(k.keyIdHex(), std::string("CA5A71A18399347E"));
    }

    void signatureIsBlake2b512Prehashed()
    {
        // The content signature must verify as a plain Ed25519 signature of BLAKE2b-512(content).
        const auto pair = ms::generateKeyPair();
        const auto s = ms::parseSignature(ms::sign(pair.secretKey, "abc", "t"), "s");
        unsigned char digest[64];
        crypto_generichash(digest, 64, reinterpret_cast<const unsigned char *>("abc"), 3, nullptr, 0);
        QCOMPARE(crypto_sign_verify_detached(s.signature.data(), digest, 64, pair.publicKey.key.data()), 0);
        QVERIFY(crypto_sign_verify_detached(s.signature.data(), reinterpret_cast<const unsigned char *>("abc"), 3,
                                            pair.publicKey.key.data()) != 0);
    }

    void oneChangedByteIsRefused()
    {
        const auto pair = ms::generateKeyPair();
        std::string content(1000, 'x');
        const auto sig = ms::sign(pair.secretKey, content, "t");
        content[500] = 'y';
        QVERIFY(test::errorOf([&] {
                    (void)ms::verify(pair.publicKey, content, sig, "m.minisig");
                }).contains(QLatin1String("m.minisig: signature verification failed")));
    }

    void anotherKeyIsRefused()
    {
        const auto a = ms::generateKeyPair();
        const auto b = ms::generateKeyPair();
        const auto sig = ms::sign(a.secretKey, "data", "t");
        // Different key id: named in the message.
        const auto e1 = test::errorOf([&] { (void)ms::verify(b.publicKey, "data", sig, "s"); });
        QVERIFY2(e1.contains(QString::fromStdString("signed by key " + a.publicKey.keyIdHex())), qPrintable(e1));
        // Same key id, other key (an impostor copying the id): the signature itself fails.
        auto impostor = b.publicKey;
        impostor.keyId = a.publicKey.keyId;
        QVERIFY(test::errorOf([&] {
                    (void)ms::verify(impostor, "data", sig, "s");
                }).contains(QLatin1String("signature verification failed")));
    }

    void tamperedTrustedCommentIsRefused()
    {
        const auto pair = ms::generateKeyPair();
        auto sig = ms::sign(pair.secretKey, "data", "timestamp:1\tfile:a");
        const auto pos = sig.find("file:a");
        sig[pos + 5] = 'b';
        QVERIFY(test::errorOf([&] {
                    (void)ms::verify(pair.publicKey, "data", sig, "s");
                }).contains(QLatin1String("trusted comment's signature is invalid")));
    }

    void legacyNonPrehashedVerifies()
    {
        // Build an "Ed" signature by hand (content signed directly) and check that it verifies.
        const auto pair = ms::generateKeyPair();
        auto s = ms::parseSignature(ms::sign(pair.secretKey, "legacy", "tc"), "s");
        unsigned char blob[74];
        blob[0] = 'E';
        blob[1] = 'd';
        std::copy(s.keyId.begin(), s.keyId.end(), blob + 2);
        crypto_sign_detached(blob + 10, nullptr, reinterpret_cast<const unsigned char *>("legacy"), 6,
                             pair.secretKey.key.data());
        std::string global(reinterpret_cast<char *>(blob + 10), 64);
        global += "tc";
        unsigned char gsig[64];
        crypto_sign_detached(gsig, nullptr, reinterpret_cast<const unsigned char *>(global.data()), global.size(),
                             pair.secretKey.key.data());
        char b1[200], b2[200];
        sodium_bin2base64(b1, sizeof b1, blob, 74, sodium_base64_VARIANT_ORIGINAL);
        sodium_bin2base64(b2, sizeof b2, gsig, 64, sodium_base64_VARIANT_ORIGINAL);
        const std::string text = std::string("untrusted comment: x\n") + b1 + "\ntrusted comment: tc\n" + b2 + "\n";
        const auto v = ms::verify(pair.publicKey, "legacy", text, "s");
        QVERIFY(!v.prehashed);
        QVERIFY(test::errorOf([&] {
                    (void)ms::verify(pair.publicKey, "legacz", text, "s");
                }).contains(QLatin1String("signature verification failed")));
    }

    void malformedFilesAreRefused_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("empty") << QString() << "it needs 4 lines";
        QTest::newRow("no comment") << "RUR\nx\ntrusted comment: a\ny\n"
                                    << "first line must start";
        QTest::newRow("no trusted") << "untrusted comment: a\nRUR\nhello\ny\n"
                                    << "third line must start";
        QTest::newRow("bad base64") << "untrusted comment: a\n!!!\ntrusted comment: a\nAAAA\n"
                                    << "signature line is not base64 of 74 bytes";
        QTest::newRow("short global")
            << "untrusted comment: a\n"
               "RUR+NJmDoXFaymZumnTxGIeJ5nhgDnJJqozrYzwObiD7FhpXB5/uOKzQwan5jQUyfwDBw09mPgZeMYKmnTU3OmqrD0c8TvXPawg=\n"
               "trusted comment: a\nAAAA\n"
            << "global signature line is not base64 of 64 bytes";
        QTest::newRow("unknown algorithm")
            << "untrusted comment: a\n"
               "QUR+NJmDoXFaymZumnTxGIeJ5nhgDnJJqozrYzwObiD7FhpXB5/uOKzQwan5jQUyfwDBw09mPgZeMYKmnTU3OmqrD0c8TvXPawg=\n"
               "trusted comment: a\n"
               "wYbFb8iKfYe6MFhddNiixEphIthVhMVblvpOmQpXrpwwuAuldhP0k9Vde0LeCLDyuRWdKfHnxb3xniKS767bDQ==\n"
            << "unsupported signature algorithm";
    }

    void malformedFilesAreRefused()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        const auto pair = ms::generateKeyPair();
        const auto e = test::errorOf([&] { (void)ms::verify(pair.publicKey, "x", text.toStdString(), "f.minisig"); });
        QVERIFY2(e.startsWith(QLatin1String("f.minisig: ")) && e.contains(expected), qPrintable(e));
    }

    void malformedKeysAreRefused()
    {
        QVERIFY(test::errorOf([] {
                    (void)ms::parsePublicKey("untrusted comment: x\nAAAA\n", "k.pub");
                }).contains(QLatin1String("k.pub: the public key line is not base64 of 42 bytes")));
        QVERIFY(
            test::errorOf([] { (void)ms::parsePublicKey("hello", "k.pub"); }).contains(QLatin1String("not base64")));
        QVERIFY(test::errorOf([] {
                    (void)ms::parseSecretKey("garbage\n", std::nullopt, "k.key");
                }).contains(QLatin1String("k.key: not a minisign secret key file")));
        // A flipped byte inside an unencrypted secret key breaks its checksum.
        const auto pair = ms::generateKeyPair();
        auto text = ms::formatSecretKey(pair.secretKey, std::nullopt);
        const auto line = text.find('\n') + 1;
        text[line + 100] = text[line + 100] == 'A' ? 'B' : 'A';
        QVERIFY(test::errorOf([&] {
                    (void)ms::parseSecretKey(text, std::nullopt, "k.key");
                }).contains(QLatin1String("corrupt")));
        QVERIFY(test::errorOf([] {
                    (void)ms::verifyFile(ms::generateKeyPair().publicKey, "/nonexistent/f");
                }).contains(QLatin1String("is not signed")));
        QVERIFY(test::errorOf([&] {
                    (void)ms::sign(pair.secretKey, "x", "two\nlines");
                }).contains(QLatin1String("one line")));
    }

    void secretKeyFormsRoundTrip()
    {
        const auto pair = ms::generateKeyPair();
        const auto plain = ms::parseSecretKey(ms::formatSecretKey(pair.secretKey, std::nullopt), std::nullopt, "k");
        QVERIFY(plain.key == pair.secretKey.key && plain.keyId == pair.secretKey.keyId);
        const auto enc = ms::formatSecretKey(pair.secretKey, std::string("correct horse"), ms::KdfCost::interactive());
        QVERIFY(ms::secretKeyIsEncrypted(enc, "k"));
        const auto back = ms::parseSecretKey(enc, std::string("correct horse"), "k");
        QVERIFY(back.key == pair.secretKey.key);
        QVERIFY(test::errorOf([&] {
                    (void)ms::parseSecretKey(enc, std::string("wrong"), "k");
                }).contains(QLatin1String("wrong password")));
        QVERIFY(test::errorOf([&] {
                    (void)ms::parseSecretKey(enc, std::nullopt, "k");
                }).contains(QLatin1String("password-protected")));
        const auto pub = ms::parsePublicKey(ms::formatPublicKey(pair.publicKey), "p");
        QVERIFY(pub == pair.publicKey);
        QVERIFY(ms::parsePublicKey(ms::publicKeyBase64(pair.publicKey), "p") == pair.publicKey);
    }

    void writeKeyPairRefusesOverwriteAndProtectsSecret()
    {
        QTemporaryDir d;
        const auto pair = ms::generateKeyPair();
        ms::writeKeyPair(pair, p(d, "k/lead.pub"), p(d, "k/lead.key"), std::nullopt);
        const auto perms = std::filesystem::status(p(d, "k/lead.key")).permissions();
        QCOMPARE(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
                 std::filesystem::perms::none);
        QVERIFY(test::errorOf([&] {
                    ms::writeKeyPair(ms::generateKeyPair(), p(d, "k/lead.pub"), p(d, "k/lead.key"), std::nullopt);
                }).contains(QLatin1String("already exists")));
        QVERIFY(ms::loadPublicKey(p(d, "k/lead.pub")) == pair.publicKey);
    }

    // --- interop --------------------------------------------------------------------------

    void minisignVerifiesOurSignatures()
    {
        if (!m_haveMinisign)
            QSKIP("minisign is not installed (installers/install-deps.sh installs it); interop not checked");
        QTemporaryDir d;
        const auto pair = ms::generateKeyPair();
        ms::writeKeyPair(pair, p(d, "ours.pub"), p(d, "ours.key"), std::nullopt);
        writeFileAtomically(p(d, "file.bin"), std::string("\x00\x01 payload \xff", 12));
        writeFileAtomically(p(d, "file.bin.minisig"), ms::signFile(pair.secretKey, p(d, "file.bin"), "our comment"));
        auto [rc, out] = runMinisign({"-V", "-p", q(p(d, "ours.pub")), "-m", q(p(d, "file.bin"))});
        QVERIFY2(rc == 0, qPrintable(out));
        QVERIFY2(out.contains(QLatin1String("Trusted comment: our comment")), qPrintable(out));
        // minisign refuses it after a changed byte, too (our signature is not accepted blindly).
        writeFileAtomically(p(d, "file.bin"), std::string("\x00\x01 payload \xfe", 12));
        std::tie(rc, out) = runMinisign({"-V", "-p", q(p(d, "ours.pub")), "-m", q(p(d, "file.bin"))});
        QVERIFY2(rc != 0, qPrintable(out));
    }

    void minisignSignsWithOurKeys()
    {
        if (!m_haveMinisign)
            QSKIP("minisign is not installed (installers/install-deps.sh installs it); interop not checked");
        QTemporaryDir d;
        // Unencrypted and password-protected secret keys written by us are usable by minisign.
        const auto pair = ms::generateKeyPair();
        writeFileAtomically(p(d, "plain.key"), ms::formatSecretKey(pair.secretKey, std::nullopt));
        writeFileAtomically(p(d, "enc.key"),
                            ms::formatSecretKey(pair.secretKey, std::string("pw123"), ms::KdfCost::interactive()));
        writeFileAtomically(p(d, "f"), "content\n");
        auto [rc, out] = runMinisign({"-S", "-s", q(p(d, "plain.key")), "-m", q(p(d, "f")), "-t", "by minisign"});
        QVERIFY2(rc == 0, qPrintable(out));
        auto v = ms::verifyFile(pair.publicKey, p(d, "f"));
        QCOMPARE(v.trustedComment, std::string("by minisign"));
        std::tie(rc, out) = runMinisign(
            {"-S", "-s", q(p(d, "enc.key")), "-m", q(p(d, "f")), "-x", q(p(d, "f.sig2")), "-t", "encrypted key"},
            "pw123\n");
        QVERIFY2(rc == 0, qPrintable(out));
        v = ms::verifyFile(pair.publicKey, p(d, "f"), p(d, "f.sig2"));
        QCOMPARE(v.trustedComment, std::string("encrypted key"));
    }

    void weUseMinisignKeysAndVerifyItsSignatures()
    {
        if (!m_haveMinisign)
            QSKIP("minisign is not installed (installers/install-deps.sh installs it); interop not checked");
        QTemporaryDir d;
        auto [rc, out] = runMinisign({"-G", "-W", "-p", q(p(d, "m.pub")), "-s", q(p(d, "m.key"))});
        QVERIFY2(rc == 0, qPrintable(out));
        writeFileAtomically(p(d, "f"), "minisign signed this\n");
        std::tie(rc, out) = runMinisign({"-S", "-s", q(p(d, "m.key")), "-m", q(p(d, "f")), "-t", "theirs"});
        QVERIFY2(rc == 0, qPrintable(out));
        const auto pub = ms::loadPublicKey(p(d, "m.pub"));
        QCOMPARE(ms::verifyFile(pub, p(d, "f")).trustedComment, std::string("theirs"));
        // Their secret key signs for us, and minisign verifies that.
        const auto sec = ms::loadSecretKey(p(d, "m.key"), std::nullopt);
        QVERIFY(sec.publicKey() == pub);
        writeFileAtomically(p(d, "g"), "we signed this\n");
        writeFileAtomically(p(d, "g.minisig"), ms::signFile(sec, p(d, "g"), ms::defaultTrustedComment(p(d, "g"))));
        std::tie(rc, out) = runMinisign({"-V", "-p", q(p(d, "m.pub")), "-m", q(p(d, "g"))});
        QVERIFY2(rc == 0 && out.contains(QLatin1String("file:g\thashed")), qPrintable(out));
        // Their one-changed-byte file is refused by us.
        writeFileAtomically(p(d, "f"), "minisign signed thiS\n");
        QVERIFY(test::errorOf([&] {
                    (void)ms::verifyFile(pub, p(d, "f"));
                }).contains(QLatin1String("signature verification failed")));
    }

    void weReadMinisignEncryptedKeys()
    {
        if (!m_haveMinisign)
            QSKIP("minisign is not installed (installers/install-deps.sh installs it); interop not checked");
        // minisign writes its own scrypt cost (1 GiB, ~6 s here): one key, read once.
        QTemporaryDir d;
        auto [rc, out] = runMinisign({"-G", "-p", q(p(d, "e.pub")), "-s", q(p(d, "e.key"))}, "s3cret\ns3cret\n");
        QVERIFY2(rc == 0, qPrintable(out));
        const auto sec = ms::loadSecretKey(p(d, "e.key"), std::string("s3cret"));
        QVERIFY(sec.publicKey() == ms::loadPublicKey(p(d, "e.pub")));
    }
};

QTEST_GUILESS_MAIN(TestMinisign)
#include "tst_minisign.moc"
