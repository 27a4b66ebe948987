// Run manifest trust (core/security/RunTrust.h): pinning, refusals, key rotation chains, and the
// bundled default run's signature.
#include "security/RunTrust.h"
#include "util/AtomicFile.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace dedloc;
namespace ms = dedloc::minisign;
namespace fs = std::filesystem;

namespace {

const std::string Manifest = "{\n  \"run_id\": \"demo-run\",\n  \"name\": \"Demo\"\n}\n";

struct Run {
    QTemporaryDir tmp;
    fs::path root{tmp.path().toStdString()};
    fs::path runDir = root / "run";
    fs::path manifest = runDir / "manifest.json";
    fs::path trust = root / "data" / "trust";

    void write(const ms::KeyPair &lead, const std::string &content = Manifest)
    {
        fs::create_directories(runDir);
        writeFileAtomically(manifest, content);
        writeFileAtomically(manifest.string() + ".minisig", ms::signFile(lead.secretKey, manifest, "run demo-run"));
    }
    void ship(const ms::KeyPair &lead)
    {
        writeFileAtomically(runDir / "lead.pub", ms::formatPublicKey(lead.publicKey));
    }
    ManifestTrust check(const std::optional<fs::path> &installed = std::nullopt) const
    {
        return verifyRunManifest(manifest, trust, installed);
    }
    QString refusal(const std::optional<fs::path> &installed = std::nullopt) const
    {
        return test::errorOf([&] { (void)check(installed); });
    }
};

} // namespace

class TestRunTrust final : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void pinsOnFirstUseThenRefusesAnotherKey()
    {
        Run run;
        const auto lead = ms::generateKeyPair();
        run.write(lead);
        run.ship(lead);
        const auto first = run.check();
        QCOMPARE(first.anchor, std::string("first use"));
        QVERIFY(first.key == lead.publicKey);
        QCOMPARE(first.trustedComment, std::string("run demo-run"));
        QVERIFY(first.pinFile == run.trust / "demo-run.pub");
        QVERIFY(ms::loadPublicKey(first.pinFile) == lead.publicKey);
        QCOMPARE(run.check().anchor, std::string("pinned"));

        // An attacker replaces manifest, signature and lead.pub: the pin refuses it.
        const auto attacker = ms::generateKeyPair();
        run.write(attacker, Manifest + " ");
        run.ship(attacker);
        const auto e = run.refusal();
        QVERIFY2(e.contains(QString::fromStdString("signed by key " + attacker.publicKey.keyIdHex())) &&
                     e.contains(QLatin1String("refusing to join")),
                 qPrintable(e));
        QVERIFY(ms::loadPublicKey(first.pinFile) == lead.publicKey); // pin unchanged
    }

    void changedByteIsRefused()
    {
        Run run;
        const auto lead = ms::generateKeyPair();
        run.write(lead);
        run.ship(lead);
        auto text = Manifest;
        text[text.find("Demo")] = 'd';
        writeFileAtomically(run.manifest, text);
        const auto e = run.refusal();
        QVERIFY2(e.contains(QLatin1String("run demo-run refused")) &&
                     e.contains(QLatin1String("signature verification failed")),
                 qPrintable(e));
        QVERIFY(!fs::exists(run.trust / "demo-run.pub")); // nothing pinned from a refused run
    }

    void otherKeyThanInstalledIsRefused()
    {
        Run run;
        const auto lead = ms::generateKeyPair();
        const auto other = ms::generateKeyPair();
        run.write(other);
        run.ship(other); // lead.pub beside the manifest does not override the installed key
        const auto installed = run.root / "installed.pub";
        writeFileAtomically(installed, ms::formatPublicKey(lead.publicKey));
        const auto e = run.refusal(installed);
        QVERIFY2(e.contains(QLatin1String("trusted lead key (installed)")), qPrintable(e));
        run.write(lead);
        QCOMPARE(run.check(installed).anchor, std::string("installed"));
    }

    void missingSignatureIsRefused()
    {
        Run run;
        const auto lead = ms::generateKeyPair();
        run.write(lead);
        run.ship(lead);
        fs::remove(run.manifest.string() + ".minisig");
        const auto e = run.refusal();
        QVERIFY2(e.contains(QLatin1String("is not signed")) &&
                     e.contains(QLatin1String("manifest.json.minisig is missing")),
                 qPrintable(e));
        // No key known at all is refused too.
        run.write(lead);
        fs::remove(run.runDir / "lead.pub");
        QVERIFY(run.refusal().contains(QLatin1String("no lead public key is known")));
    }

    void rotationChainIsAccepted()
    {
        Run run;
        const auto k0 = ms::generateKeyPair();
        run.write(k0);
        run.ship(k0);
        QCOMPARE(run.check().rotations, 0); // pinned k0
        const auto k1 = ms::generateKeyPair();
        const auto k2 = ms::generateKeyPair();
        const auto k3 = ms::generateKeyPair();
        (void)writeRotationStatement(k0.secretKey, k1.publicKey, run.runDir);
        (void)writeRotationStatement(k1.secretKey, k2.publicKey, run.runDir);
        (void)writeRotationStatement(k2.secretKey, k3.publicKey, run.runDir);
        run.write(k3);
        run.ship(k3);
        const auto t = run.check();
        QCOMPARE(t.rotations, 3);
        QVERIFY(t.key == k3.publicKey);
        QVERIFY(ms::loadPublicKey(t.pinFile) == k3.publicKey); // the pin follows the rotation
        // After the pin moved, the old key's manifests are refused (no rotation back).
        run.write(k0);
        QVERIFY(run.refusal().contains(QLatin1String("refusing to join")));
    }

    void rotationSignedByStrangerIsRefused()
    {
        Run run;
        const auto k0 = ms::generateKeyPair();
        run.write(k0);
        run.ship(k0);
        (void)run.check();
        const auto stranger = ms::generateKeyPair();
        const auto k1 = ms::generateKeyPair();
        (void)writeRotationStatement(stranger.secretKey, k1.publicKey, run.runDir);
        run.write(k1);
        QVERIFY(run.refusal().contains(QLatin1String("no valid rotation statement signed by it")));

        // A forged statement that claims k0's key id fails k0's signature check.
        const auto forgedPub = run.runDir / "rotations" / (k1.publicKey.keyIdHex() + ".pub");
        ms::KeyPair forger = stranger;
        forger.secretKey.keyId = k0.secretKey.keyId;
        writeFileAtomically(forgedPub.string() + ".minisig", ms::sign(forger.secretKey, readWholeFile(forgedPub),
                                                                      RotationCommentPrefix + k1.publicKey.keyIdHex()));
        const auto e = run.refusal();
        QVERIFY2(e.contains(QLatin1String("signature verification failed")), qPrintable(e));

        // A genuine k0 signature over a .pub with another purpose is not a rotation.
        writeFileAtomically(forgedPub.string() + ".minisig",
                            ms::sign(k0.secretKey, readWholeFile(forgedPub), "just a key file"));
        QVERIFY(run.refusal().contains(QLatin1String("is not a key rotation statement")));
        QVERIFY(ms::loadPublicKey(run.trust / "demo-run.pub") == k0.publicKey);
    }

    void bundledDefaultRunIsSigned()
    {
        const auto manifest = test::defaultManifest();
        const auto leadPub = manifest.parent_path() / "lead.pub";
        if (!fs::exists(leadPub))
            QFAIL("resources/default-run/lead.pub is missing");
        QTemporaryDir tmp;
        const auto t = verifyRunManifest(manifest, fs::path(tmp.path().toStdString()), leadPub);
        QCOMPARE(t.anchor, std::string("installed"));
        QVERIFY(t.key == ms::loadPublicKey(leadPub));
    }
};

QTEST_GUILESS_MAIN(TestRunTrust)
#include "tst_runtrust.moc"
