// Access tokens (core/security/AccessToken.h): issue, decode, and every refusal.
#include "security/AccessToken.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QtTest>

#include <sodium.h>

using namespace dedloc;
namespace ms = dedloc::minisign;

namespace {

constexpr std::int64_t Now = 1'800'000'000;

Ed25519PublicKey peerKey()
{
    Ed25519PublicKey pk{};
    unsigned char sk[64];
    crypto_sign_keypair(pk.data(), sk);
    return pk;
}

} // namespace

class TestAccessToken final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase() { QVERIFY(sodium_init() >= 0); }

    void validTokenVerifiesAndDecodes()
    {
        const auto lead = ms::generateKeyPair();
        const auto peer = peerKey();
        const auto token = issueAccessToken(lead.secretKey, "closed-run", peer, "Alice's 4090", Now, Now + 3600);
        QVERIFY(token.starts_with("dlt1."));
        QVERIFY(token.size() < 350);
        const auto t = verifyAccessToken(token, lead.publicKey, "closed-run", Now + 10);
        QCOMPARE(t.name, std::string("Alice's 4090"));
        QCOMPARE(t.runId, std::string("closed-run"));
        QCOMPARE(t.expiresAt, Now + 3600);
        QCOMPARE(t.issuedAt, Now);
        QVERIFY(t.peerKey == peer);
        QVERIFY(t.leadKeyId == lead.publicKey.keyId);
        checkTokenBinding(t, peer); // does not throw
        QCOMPARE(decodeAccessToken(token).name, std::string("Alice's 4090"));
    }

    void expiryHonoursTheSkewAllowance()
    {
        const auto lead = ms::generateKeyPair();
        const auto token = issueAccessToken(lead.secretKey, "r", peerKey(), "n", Now, Now + 3600);
        (void)verifyAccessToken(token, lead.publicKey, "r", Now + 3600 + ClockSkewSeconds); // edge: accepted
        QVERIFY(test::errorOf([&] {
                    (void)verifyAccessToken(token, lead.publicKey, "r", Now + 3600 + ClockSkewSeconds + 1);
                }).contains(QLatin1String("expired 301 s ago")));
        (void)verifyAccessToken(token, lead.publicKey, "r", Now - ClockSkewSeconds);
        QVERIFY(test::errorOf([&] {
                    (void)verifyAccessToken(token, lead.publicKey, "r", Now - ClockSkewSeconds - 1);
                }).contains(QLatin1String("not valid yet")));
    }

    void forgedAlteredAndForeignTokensAreRefused()
    {
        const auto lead = ms::generateKeyPair();
        const auto token = issueAccessToken(lead.secretKey, "r", peerKey(), "name", Now, Now + 3600);
        // Another key that copies the lead's key id: signature fails.
        auto forger = ms::generateKeyPair();
        forger.secretKey.keyId = lead.secretKey.keyId;
        const auto forged = issueAccessToken(forger.secretKey, "r", peerKey(), "name", Now, Now + 3600);
        QVERIFY(test::errorOf([&] {
                    (void)verifyAccessToken(forged, lead.publicKey, "r", Now);
                }).contains(QLatin1String("invalid signature")));
        // Other key id: named as such.
        QVERIFY(test::errorOf([&] {
                    (void)verifyAccessToken(token, ms::generateKeyPair().publicKey, "r", Now);
                }).contains(QLatin1String("another lead key")));
        // Another run.
        QVERIFY(test::errorOf([&] {
                    (void)verifyAccessToken(token, lead.publicKey, "other", Now);
                }).contains(QLatin1String("is for run r, not other")));
        // One altered character inside the body (the name's last character): signature fails.
        auto altered = token;
        const auto pos = token.size() - 90;
        altered[pos] = altered[pos] == 'A' ? 'B' : 'A';
        const auto e = test::errorOf([&] { (void)verifyAccessToken(altered, lead.publicKey, "r", Now); });
        QVERIFY2(e.contains(QLatin1String("invalid signature")) || e.contains(QLatin1String("malformed")),
                 qPrintable(e));
    }

    void bindingIsChecked()
    {
        const auto lead = ms::generateKeyPair();
        const auto alice = peerKey();
        const auto mallory = peerKey();
        const auto t = verifyAccessToken(issueAccessToken(lead.secretKey, "r", alice, "alice", Now, Now + 60),
                                         lead.publicKey, "r", Now);
        QVERIFY(test::errorOf([&] {
                    checkTokenBinding(t, mallory);
                }).contains(QLatin1String("not to the presenting peer")));
    }

    void malformedInputIsRefused()
    {
        const auto lead = ms::generateKeyPair();
        QVERIFY(test::errorOf([] { (void)decodeAccessToken("hello"); }).contains(QLatin1String("must start with")));
        QVERIFY(test::errorOf([] { (void)decodeAccessToken("dlt1.***"); }).contains(QLatin1String("base64url")));
        QVERIFY(test::errorOf([] { (void)decodeAccessToken("dlt1.AAAA"); }).contains(QLatin1String("truncated")));
        QVERIFY(test::errorOf([&] {
                    (void)issueAccessToken(lead.secretKey, "", peerKey(), "n", Now, Now + 1);
                }).contains(QLatin1String("run id must be 1 to 64 bytes")));
        QVERIFY(test::errorOf([&] {
                    (void)issueAccessToken(lead.secretKey, "r", peerKey(), std::string(65, 'n'), Now, Now + 1);
                }).contains(QLatin1String("name must be 1 to 64 bytes")));
        QVERIFY(test::errorOf([&] {
                    (void)issueAccessToken(lead.secretKey, "r", peerKey(), "n", Now, Now);
                }).contains(QLatin1String("expire before")));
        QVERIFY(test::errorOf([] { (void)parsePeerKeyHex("abc"); }).contains(QLatin1String("64 hex digits")));
        const std::string hex(64, 'a');
        QCOMPARE(parsePeerKeyHex(hex)[0], static_cast<unsigned char>(0xaa));
    }
};

QTEST_GUILESS_MAIN(TestAccessToken)
#include "tst_accesstoken.moc"
