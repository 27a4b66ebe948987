#include "KeyCommands.h"

#include "run/RunManifest.h"
#include "security/AccessToken.h"
#include "security/Minisign.h"
#include "security/RunTrust.h"
#include "util/AtomicFile.h"
#include "util/Error.h"
#include "util/Clock.h"

#include <QCommandLineParser>

#include <algorithm>
#include <cctype>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

namespace dedloc::lead {

namespace {

namespace fs = std::filesystem;

// Password options shared by the commands that read or write secret keys. A password never
// comes from argv (visible in `ps` and shell history): an environment variable or stdin.
struct PasswordOptions {
    QCommandLineOption env{QStringLiteral("password-env"),
                           QStringLiteral("Read the secret key's password from this environment variable."),
                           QStringLiteral("name")};
    QCommandLineOption stdinOpt{QStringLiteral("password-stdin"),
                                QStringLiteral("Read the secret key's password from the first line of stdin.")};
    void add(QCommandLineParser &p) const { p.addOptions({env, stdinOpt}); }
    // nullopt when neither option is set; throws when the variable is unset or empty.
    [[nodiscard]] std::optional<std::string> read(const QCommandLineParser &p) const
    {
        if (p.isSet(env)) {
            const auto name = p.value(env).toStdString();
            const char *value = std::getenv(name.c_str());
            if (value == nullptr || *value == '\0')
                throw Error("the environment variable " + name + " (--password-env) is not set or empty");
            return std::string(value);
        }
        if (p.isSet(stdinOpt)) {
            std::string line;
            if (!std::getline(std::cin, line) || line.empty())
                throw Error("--password-stdin: no password on stdin");
            if (!line.empty() && line.back() == '\r')
                line.pop_back();
            return line;
        }
        return std::nullopt;
    }
};

// Why `file`, a run manifest (a .json file that names "format_version" or "run_id", valid JSON
// or not), would be refused by every peer (parseRunManifest's message); "" for a valid manifest
// or any other file. A lead learns of a typo (a missing comma, a misspelt key) when signing,
// not from volunteers whose peers refuse the run.
std::string manifestProblem(const fs::path &file)
{
    auto extension = file.extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (extension != ".json")
        return {};
    const std::string text = readWholeFile(file);
    if (text.find("\"format_version\"") == std::string::npos && text.find("\"run_id\"") == std::string::npos)
        return {};
    try {
        (void)parseRunManifest(text, file.parent_path());
    } catch (const Error &e) {
        return e.what();
    }
    return {};
}

// parse() rather than process(): bad options exit 2 with a message; --help exits 0.
bool parseOrExit(QCommandLineParser &p, const QStringList &args, const char *command, int &exitCode)
{
    if (!p.parse(args)) {
        std::fprintf(stderr, "dedloc-lead %s: %s (see --help)\n", command, qPrintable(p.errorText()));
        exitCode = 2;
        return false;
    }
    if (p.isSet(QStringLiteral("help")))
        p.showHelp(0);
    return true;
}

int badInput(const char *command, const std::string &message)
{
    std::fprintf(stderr, "dedloc-lead %s: %s\n", command, message.c_str());
    return 2;
}

minisign::SecretKey loadSecret(const fs::path &file, const PasswordOptions &pw, const QCommandLineParser &p)
{
    const std::string text = readWholeFile(file);
    std::optional<std::string> password;
    if (minisign::secretKeyIsEncrypted(text, file.string())) {
        password = pw.read(p);
        if (!password)
            throw Error(file.string() + " is password-protected: give --password-env NAME or --password-stdin");
    }
    return minisign::parseSecretKey(text, password, file.string());
}

} // namespace

int keygen(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Generate a lead key pair in the minisign formats (usable by `minisign` too). Keep the secret key offline."));
    p.addHelpOption();
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Directory for lead.pub and lead.key."),
                                 QStringLiteral("dir"));
    const QCommandLineOption pub(QStringLiteral("public"), QStringLiteral("Public key file."), QStringLiteral("file"));
    const QCommandLineOption sec(QStringLiteral("secret"), QStringLiteral("Secret key file (written mode 0600)."),
                                 QStringLiteral("file"));
    const QCommandLineOption noPassword(QStringLiteral("no-password"),
                                        QStringLiteral("Store the secret key unencrypted."));
    const QCommandLineOption force(QStringLiteral("force"), QStringLiteral("Overwrite existing key files."));
    const QCommandLineOption kdf(
        QStringLiteral("kdf"),
        QStringLiteral("scrypt cost of a password-protected key: sensitive (minisign's: 1 GiB, "
                       "seconds) or interactive (16 MiB; tests and throw-away keys only)."),
        QStringLiteral("cost"), QStringLiteral("sensitive"));
    PasswordOptions pw;
    p.addOptions({out, pub, sec, noPassword, force, kdf});
    pw.add(p);
    int rc = 0;
    if (!parseOrExit(p, args, "keygen", rc))
        return rc;
    fs::path pubFile, secFile;
    if (p.isSet(out)) {
        pubFile = fs::path(p.value(out).toStdString()) / "lead.pub";
        secFile = fs::path(p.value(out).toStdString()) / "lead.key";
    }
    if (p.isSet(pub))
        pubFile = p.value(pub).toStdString();
    if (p.isSet(sec))
        secFile = p.value(sec).toStdString();
    if (pubFile.empty() || secFile.empty())
        return badInput("keygen", "give --out DIR, or both --public FILE and --secret FILE");
    const auto password = pw.read(p);
    if (password && p.isSet(noPassword))
        return badInput("keygen", "--no-password contradicts --password-env/--password-stdin");
    if (!password && !p.isSet(noPassword))
        return badInput("keygen", "choose --password-env NAME, --password-stdin or --no-password");
    minisign::KdfCost cost;
    if (p.value(kdf) == QLatin1String("interactive"))
        cost = minisign::KdfCost::interactive();
    else if (p.value(kdf) != QLatin1String("sensitive"))
        return badInput("keygen", "--kdf takes sensitive or interactive");
    const auto pair = minisign::generateKeyPair();
    minisign::writeKeyPair(pair, pubFile, secFile, password, cost, p.isSet(force));
    std::printf("key %s\npublic key: %s\nsecret key: %s%s\nminisign -Vm <file> -P %s\n",
                pair.publicKey.keyIdHex().c_str(), pubFile.c_str(), secFile.c_str(),
                password ? " (password-protected, scrypt)" : " (UNENCRYPTED: keep it offline)",
                minisign::publicKeyBase64(pair.publicKey).c_str());
    return 0;
}

int sign(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Sign files: writes FILE.minisig (minisign prehashed format)."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("files"), QStringLiteral("Files to sign."), QStringLiteral("FILE..."));
    const QCommandLineOption sec(QStringLiteral("secret"), QStringLiteral("Secret key file."), QStringLiteral("file"));
    const QCommandLineOption trusted(QStringLiteral("trusted-comment"),
                                     QStringLiteral("Signed one-line comment (default: timestamp and file name)."),
                                     QStringLiteral("text"));
    const QCommandLineOption untrusted(QStringLiteral("untrusted-comment"),
                                       QStringLiteral("Unsigned one-line comment."), QStringLiteral("text"));
    PasswordOptions pw;
    p.addOptions({sec, trusted, untrusted});
    pw.add(p);
    int rc = 0;
    if (!parseOrExit(p, args, "sign", rc))
        return rc;
    if (!p.isSet(sec))
        return badInput("sign", "--secret FILE is required");
    if (p.positionalArguments().isEmpty())
        return badInput("sign", "give at least one file to sign");
    // Every file is checked before any is signed.
    for (const auto &f : p.positionalArguments()) {
        const fs::path file = f.toStdString();
        if (!fs::is_regular_file(file))
            return badInput("sign", file.string() + " is not a regular file");
        if (const auto why = manifestProblem(file); !why.empty())
            return badInput("sign", file.string() + " is a run manifest that peers would refuse: " + why);
    }
    const auto key = loadSecret(p.value(sec).toStdString(), pw, p);
    for (const auto &f : p.positionalArguments()) {
        const fs::path file = f.toStdString();
        const std::string tc =
            p.isSet(trusted) ? p.value(trusted).toStdString() : minisign::defaultTrustedComment(file);
        const std::string text = p.isSet(untrusted)
                                     ? minisign::signFile(key, file, tc, p.value(untrusted).toStdString())
                                     : minisign::signFile(key, file, tc);
        writeFileAtomically(file.string() + ".minisig", text);
        std::printf("signed %s -> %s.minisig (key %s)\n", file.c_str(), file.c_str(),
                    key.publicKey().keyIdHex().c_str());
    }
    return 0;
}

int verify(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Verify FILE against FILE.minisig and a public key."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("file"), QStringLiteral("File to verify."));
    const QCommandLineOption pub(QStringLiteral("public"), QStringLiteral("Public key file, or the base64 key itself."),
                                 QStringLiteral("key"));
    const QCommandLineOption sig(QStringLiteral("signature"), QStringLiteral("Signature file (default FILE.minisig)."),
                                 QStringLiteral("file"));
    p.addOptions({pub, sig});
    int rc = 0;
    if (!parseOrExit(p, args, "verify", rc))
        return rc;
    if (!p.isSet(pub) || p.positionalArguments().size() != 1)
        return badInput("verify", "give one FILE and --public KEY");
    const std::string keyArg = p.value(pub).toStdString();
    const auto key =
        fs::exists(keyArg) ? minisign::loadPublicKey(keyArg) : minisign::parsePublicKey(keyArg, "--public");
    const fs::path file = p.positionalArguments().front().toStdString();
    if (!fs::is_regular_file(file))
        return badInput("verify", file.string() + " is not a regular file");
    std::optional<fs::path> sigFile;
    if (p.isSet(sig))
        sigFile = p.value(sig).toStdString();
    try {
        const auto v = minisign::verifyFile(key, file, sigFile);
        std::printf("Signature and comment signature verified (key %s)\nTrusted comment: %s\n", key.keyIdHex().c_str(),
                    v.trustedComment.c_str());
        return 0;
    } catch (const Error &e) {
        std::fprintf(stderr, "dedloc-lead verify: REFUSED: %s\n", e.what());
        return 1;
    }
}

int rotateKey(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Write a key rotation statement into a run: the new lead public key signed by the old secret key "
        "(RUN/rotations/<NEW KEY ID>.pub and .minisig). Re-sign the manifest with the new key afterwards."));
    p.addHelpOption();
    const QCommandLineOption oldSec(QStringLiteral("old-secret"), QStringLiteral("The current lead secret key."),
                                    QStringLiteral("file"));
    const QCommandLineOption newPub(QStringLiteral("new-public"), QStringLiteral("The new lead public key."),
                                    QStringLiteral("file"));
    const QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Run directory (holds manifest.json)."),
                                 QStringLiteral("dir"));
    PasswordOptions pw;
    p.addOptions({oldSec, newPub, run});
    pw.add(p);
    int rc = 0;
    if (!parseOrExit(p, args, "rotate-key", rc))
        return rc;
    if (!p.isSet(oldSec) || !p.isSet(newPub) || !p.isSet(run))
        return badInput("rotate-key", "--old-secret, --new-public and --run are required");
    const fs::path runDir = p.value(run).toStdString();
    if (!fs::is_directory(runDir))
        return badInput("rotate-key", runDir.string() + " is not a directory");
    const auto oldKey = loadSecret(p.value(oldSec).toStdString(), pw, p);
    const auto newKey = minisign::loadPublicKey(p.value(newPub).toStdString());
    const auto statement = writeRotationStatement(oldKey, newKey, runDir);
    std::printf("wrote %s (+ .minisig): %s -> %s\n", statement.c_str(), oldKey.publicKey().keyIdHex().c_str(),
                newKey.keyIdHex().c_str());
    return 0;
}

int issueToken(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Issue an access token for a closed run: binds a peer's Ed25519 public key, a display name and an "
        "expiry, signed by the lead key. Prints the token (one line)."));
    p.addHelpOption();
    const QCommandLineOption sec(QStringLiteral("secret"), QStringLiteral("Lead secret key file."),
                                 QStringLiteral("file"));
    const QCommandLineOption runId(QStringLiteral("run-id"), QStringLiteral("Run the token admits to."),
                                   QStringLiteral("id"));
    const QCommandLineOption peerKey(
        QStringLiteral("peer-key"), QStringLiteral("Peer's Ed25519 public key, 64 hex digits."), QStringLiteral("hex"));
    const QCommandLineOption name(QStringLiteral("name"), QStringLiteral("Display name (1-64 bytes UTF-8)."),
                                  QStringLiteral("text"));
    const QCommandLineOption expires(QStringLiteral("expires-in"), QStringLiteral("Validity in hours."),
                                     QStringLiteral("hours"), QStringLiteral("720"));
    PasswordOptions pw;
    p.addOptions({sec, runId, peerKey, name, expires});
    pw.add(p);
    int rc = 0;
    if (!parseOrExit(p, args, "issue-token", rc))
        return rc;
    if (!p.isSet(sec) || !p.isSet(runId) || !p.isSet(peerKey) || !p.isSet(name))
        return badInput("issue-token", "--secret, --run-id, --peer-key and --name are required");
    bool ok = false;
    const double hours = p.value(expires).toDouble(&ok);
    if (!ok || !(hours > 0) || hours > 24.0 * 3660)
        return badInput("issue-token", "--expires-in takes a number of hours above 0 and at most ten years");
    const auto key = loadSecret(p.value(sec).toStdString(), pw, p);
    const auto peer = parsePeerKeyHex(p.value(peerKey).toStdString());
    const auto now = unixSeconds();
    const auto token = issueAccessToken(key, p.value(runId).toStdString(), peer, p.value(name).toStdString(), now,
                                        now + static_cast<std::int64_t>(hours * 3600));
    std::printf("%s\n", token.c_str());
    return 0;
}

} // namespace dedloc::lead
