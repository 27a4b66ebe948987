#include "security/Minisign.h"

#include "util/AtomicFile.h"
#include "util/Error.h"

#include <sodium.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <vector>

namespace dedloc::minisign {

namespace {

constexpr std::string_view CommentPrefix = "untrusted comment: ";
constexpr std::string_view TrustedPrefix = "trusted comment: ";
constexpr std::size_t PublicBlobBytes = 2 + KeyIdBytes + PublicKeyBytes;        // 42
constexpr std::size_t SaltBytes = crypto_pwhash_scryptsalsa208sha256_SALTBYTES; // 32
constexpr std::size_t ChecksumBytes = 32;
constexpr std::size_t KeyBlockBytes = KeyIdBytes + SecretKeyBytes + ChecksumBytes; // 104
constexpr std::size_t SecretBlobBytes = 6 + SaltBytes + 8 + 8 + KeyBlockBytes;     // 158
constexpr std::size_t SignatureBlobBytes = 2 + KeyIdBytes + SignatureBytes;        // 74

void initSodium()
{
    if (sodium_init() < 0)
        throw Error("libsodium failed to initialise");
}

const unsigned char *bytes(std::string_view s)
{
    return reinterpret_cast<const unsigned char *>(s.data());
}

std::string toBase64(const unsigned char *data, std::size_t size)
{
    std::string out(sodium_base64_ENCODED_LEN(size, sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(out.data(), out.size(), data, size, sodium_base64_VARIANT_ORIGINAL);
    out.resize(out.size() - 1); // the terminating NUL
    return out;
}

// Decodes exactly `size` bytes or throws naming `what` in `source`.
std::vector<unsigned char> fromBase64(std::string_view text, std::size_t size, const std::string &what,
                                      const std::string &source)
{
    std::vector<unsigned char> out(size + 1);
    std::size_t decoded = 0;
    const char *end = nullptr;
    if (sodium_base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &decoded, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != text.data() + text.size() || decoded != size)
        throw Error(source + ": the " + what + " line is not base64 of " + std::to_string(size) +
                    " bytes (was an actual minisign " + what + " given?)");
    out.resize(size);
    return out;
}

std::uint64_t le64(const unsigned char *p)
{
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

void putLe64(unsigned char *p, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i) {
        p[i] = static_cast<unsigned char>(v & 0xff);
        v >>= 8;
    }
}

std::string keyIdToHex(const KeyId &id)
{
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llX", static_cast<unsigned long long>(le64(id.data())));
    return buf;
}

// Splits into lines, dropping one trailing "\r" per line (files edited on Windows).
std::vector<std::string_view> splitLines(std::string_view text)
{
    std::vector<std::string_view> lines;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        auto line = text.substr(0, nl);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        lines.push_back(line);
        if (nl == std::string_view::npos)
            break;
        text.remove_prefix(nl + 1);
    }
    return lines;
}

std::string_view trimRight(std::string_view s)
{
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

void checkOneLine(const std::string &comment, std::size_t max, const char *what)
{
    if (comment.find_first_of("\r\n") != std::string::npos)
        throw Error(std::string("the ") + what + " must be one line (it contains a line break)");
    if (comment.size() > max)
        throw Error(std::string("the ") + what + " is " + std::to_string(comment.size()) + " bytes; at most " +
                    std::to_string(max) + " are allowed");
}

std::array<unsigned char, ChecksumBytes> checksum(const SecretKey &key)
{
    std::array<unsigned char, ChecksumBytes> out{};
    crypto_generichash_state st;
    crypto_generichash_init(&st, nullptr, 0, out.size());
    crypto_generichash_update(&st, reinterpret_cast<const unsigned char *>("Ed"), 2);
    crypto_generichash_update(&st, key.keyId.data(), key.keyId.size());
    crypto_generichash_update(&st, key.key.data(), key.key.size());
    crypto_generichash_final(&st, out.data(), out.size());
    return out;
}

void scryptStream(unsigned char *out, std::size_t size, const std::string &password, const unsigned char *salt,
                  std::uint64_t ops, std::uint64_t mem, const std::string &source)
{
    if (crypto_pwhash_scryptsalsa208sha256(out, size, password.data(), password.size(), salt, ops,
                                           static_cast<std::size_t>(mem)) != 0)
        throw Error(source + ": scrypt failed (opslimit " + std::to_string(ops) + ", memlimit " + std::to_string(mem) +
                    " bytes): out of memory or limits out of range");
}

std::string readFileOrThrow(const std::filesystem::path &file, const char *what)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
        throw Error(std::string(what) + " " + file.string() + " does not exist");
    return readWholeFile(file);
}

// The base64 payload line after the untrusted comment line of a key file.
std::string_view keyPayload(std::string_view text, const std::string &source, const char *what)
{
    const auto lines = splitLines(text);
    if (lines.size() < 2 || lines[0].substr(0, CommentPrefix.size()) != CommentPrefix)
        throw Error(source + ": not a minisign " + what +
                    " file (the first line must start with \"untrusted comment: \")");
    return trimRight(lines[1]);
}

} // namespace

std::string PublicKey::keyIdHex() const
{
    return keyIdToHex(keyId);
}
std::string Signature::keyIdHex() const
{
    return keyIdToHex(keyId);
}

SecretKey::~SecretKey()
{
    sodium_memzero(key.data(), key.size());
}

PublicKey SecretKey::publicKey() const
{
    PublicKey pub;
    pub.keyId = keyId;
    crypto_sign_ed25519_sk_to_pk(pub.key.data(), key.data());
    return pub;
}

KeyPair generateKeyPair()
{
    initSodium();
    KeyPair pair;
    crypto_sign_keypair(pair.publicKey.key.data(), pair.secretKey.key.data());
    randombytes_buf(pair.secretKey.keyId.data(), KeyIdBytes);
    pair.publicKey.keyId = pair.secretKey.keyId;
    return pair;
}

// --- public keys ---------------------------------------------------------------------------

std::string publicKeyBase64(const PublicKey &key)
{
    std::array<unsigned char, PublicBlobBytes> blob{};
    blob[0] = 'E';
    blob[1] = 'd';
    std::copy(key.keyId.begin(), key.keyId.end(), blob.begin() + 2);
    std::copy(key.key.begin(), key.key.end(), blob.begin() + 2 + KeyIdBytes);
    return toBase64(blob.data(), blob.size());
}

std::string formatPublicKey(const PublicKey &key)
{
    return std::string(CommentPrefix) + "minisign public key " + key.keyIdHex() + "\n" + publicKeyBase64(key) + "\n";
}

PublicKey parsePublicKey(std::string_view text, const std::string &source)
{
    initSodium();
    std::string_view line = trimRight(text);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.remove_suffix(1);
    if (line.substr(0, CommentPrefix.size()) == CommentPrefix)
        line = keyPayload(text, source, "public key");
    const auto blob = fromBase64(line, PublicBlobBytes, "public key", source);
    if (blob[0] != 'E' || blob[1] != 'd')
        throw Error(source + ": unsupported public key algorithm (expected Ed25519, \"Ed\")");
    PublicKey key;
    std::copy(blob.begin() + 2, blob.begin() + 2 + KeyIdBytes, key.keyId.begin());
    std::copy(blob.begin() + 2 + KeyIdBytes, blob.end(), key.key.begin());
    return key;
}

PublicKey loadPublicKey(const std::filesystem::path &file)
{
    return parsePublicKey(readFileOrThrow(file, "public key file"), file.string());
}

// --- secret keys ---------------------------------------------------------------------------

std::string formatSecretKey(const SecretKey &key, const std::optional<std::string> &password, const KdfCost &cost)
{
    initSodium();
    std::array<unsigned char, SecretBlobBytes> blob{};
    unsigned char *p = blob.data();
    p[0] = 'E';
    p[1] = 'd';
    if (password) {
        p[2] = 'S';
        p[3] = 'c';
    }
    p[4] = 'B';
    p[5] = '2';
    unsigned char *salt = p + 6;
    unsigned char *block = salt + SaltBytes + 16;
    std::copy(key.keyId.begin(), key.keyId.end(), block);
    std::copy(key.key.begin(), key.key.end(), block + KeyIdBytes);
    const auto sum = checksum(key);
    std::copy(sum.begin(), sum.end(), block + KeyIdBytes + SecretKeyBytes);
    if (password) {
        randombytes_buf(salt, SaltBytes);
        putLe64(salt + SaltBytes, cost.opsLimit);
        putLe64(salt + SaltBytes + 8, cost.memLimit);
        std::array<unsigned char, KeyBlockBytes> stream{};
        scryptStream(stream.data(), stream.size(), *password, salt, cost.opsLimit, cost.memLimit, "secret key");
        for (std::size_t i = 0; i < KeyBlockBytes; ++i)
            block[i] ^= stream[i];
        sodium_memzero(stream.data(), stream.size());
    }
    std::string text = std::string(CommentPrefix) +
                       (password ? "minisign encrypted secret key" : "minisign unencrypted secret key") + "\n" +
                       toBase64(blob.data(), blob.size()) + "\n";
    sodium_memzero(blob.data(), blob.size());
    return text;
}

bool secretKeyIsEncrypted(std::string_view text, const std::string &source)
{
    const auto blob = fromBase64(keyPayload(text, source, "secret key"), SecretBlobBytes, "secret key", source);
    if (blob[2] == 'S' && blob[3] == 'c')
        return true;
    if (blob[2] == 0 && blob[3] == 0)
        return false;
    throw Error(source + ": unsupported key derivation function in the secret key (expected scrypt \"Sc\" or none)");
}

SecretKey parseSecretKey(std::string_view text, const std::optional<std::string> &password, const std::string &source)
{
    initSodium();
    auto blob = fromBase64(keyPayload(text, source, "secret key"), SecretBlobBytes, "secret key", source);
    const unsigned char *p = blob.data();
    if (p[0] != 'E' || p[1] != 'd')
        throw Error(source + ": unsupported signature algorithm in the secret key (expected Ed25519, \"Ed\")");
    if (p[4] != 'B' || p[5] != '2')
        throw Error(source + ": unsupported checksum function in the secret key (expected BLAKE2b, \"B2\")");
    const bool encrypted = secretKeyIsEncrypted(text, source);
    const unsigned char *salt = p + 6;
    unsigned char *block = blob.data() + 6 + SaltBytes + 16;
    if (encrypted) {
        if (!password)
            throw Error(source + ": the secret key is password-protected and no password was given");
        std::array<unsigned char, KeyBlockBytes> stream{};
        scryptStream(stream.data(), stream.size(), *password, salt, le64(salt + SaltBytes), le64(salt + SaltBytes + 8),
                     source);
        for (std::size_t i = 0; i < KeyBlockBytes; ++i)
            block[i] ^= stream[i];
        sodium_memzero(stream.data(), stream.size());
    }
    SecretKey key;
    std::copy(block, block + KeyIdBytes, key.keyId.begin());
    std::copy(block + KeyIdBytes, block + KeyIdBytes + SecretKeyBytes, key.key.begin());
    const auto expected = checksum(key);
    const unsigned char *stored = block + KeyIdBytes + SecretKeyBytes;
    const bool zero = sodium_is_zero(stored, ChecksumBytes) != 0;
    const bool match = sodium_memcmp(stored, expected.data(), ChecksumBytes) == 0;
    sodium_memzero(blob.data(), blob.size());
    if (!match && !(zero && !encrypted))
        throw Error(encrypted ? source + ": wrong password for this secret key (checksum mismatch)"
                              : source + ": the secret key is corrupt (checksum mismatch)");
    // The secret key's second half must be its public key, or signatures would not verify.
    std::array<unsigned char, PublicKeyBytes> derived{};
    crypto_sign_ed25519_sk_to_pk(derived.data(), key.key.data());
    std::array<unsigned char, crypto_sign_SEEDBYTES> seed{};
    crypto_sign_ed25519_sk_to_seed(seed.data(), key.key.data());
    std::array<unsigned char, PublicKeyBytes> fromSeed{};
    std::array<unsigned char, SecretKeyBytes> scratch{};
    crypto_sign_seed_keypair(fromSeed.data(), scratch.data(), seed.data());
    sodium_memzero(seed.data(), seed.size());
    sodium_memzero(scratch.data(), scratch.size());
    if (derived != fromSeed)
        throw Error(source + ": the secret key is corrupt (its public half does not match its seed)");
    return key;
}

SecretKey loadSecretKey(const std::filesystem::path &file, const std::optional<std::string> &password)
{
    return parseSecretKey(readFileOrThrow(file, "secret key file"), password, file.string());
}

void writeKeyPair(const KeyPair &pair, const std::filesystem::path &publicFile, const std::filesystem::path &secretFile,
                  const std::optional<std::string> &password, const KdfCost &cost, bool overwrite)
{
    std::error_code ec;
    for (const auto &f : {publicFile, secretFile}) {
        if (!overwrite && std::filesystem::exists(f, ec))
            throw Error(f.string() + " already exists; refusing to overwrite a key (move it away first)");
        if (f.has_parent_path())
            std::filesystem::create_directories(f.parent_path(), ec);
    }
    const std::string secretText = formatSecretKey(pair.secretKey, password, cost);
    const auto oldMask = ::umask(077);
    try {
        writeFileAtomically(secretFile, secretText);
    } catch (...) {
        ::umask(oldMask);
        throw;
    }
    ::umask(oldMask);
    std::filesystem::permissions(secretFile, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                 ec);
    writeFileAtomically(publicFile, formatPublicKey(pair.publicKey));
}

// --- signatures ----------------------------------------------------------------------------

std::array<unsigned char, 64> blake2b512(std::string_view content)
{
    initSodium();
    std::array<unsigned char, 64> out{};
    crypto_generichash(out.data(), out.size(), bytes(content), content.size(), nullptr, 0);
    return out;
}

std::array<unsigned char, 64> blake2b512File(const std::filesystem::path &file)
{
    initSodium();
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw Error("cannot read " + file.string());
    crypto_generichash_state st;
    crypto_generichash_init(&st, nullptr, 0, 64);
    std::vector<char> buf(1 << 16);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto n = in.gcount();
        if (n > 0)
            crypto_generichash_update(&st, reinterpret_cast<const unsigned char *>(buf.data()),
                                      static_cast<unsigned long long>(n));
    }
    if (in.bad())
        throw Error("read error on " + file.string());
    std::array<unsigned char, 64> out{};
    crypto_generichash_final(&st, out.data(), out.size());
    return out;
}

namespace {

std::string signDigest(const SecretKey &key, const std::array<unsigned char, 64> &digest,
                       const std::string &trustedComment, const std::string &untrustedComment)
{
    checkOneLine(untrustedComment, MaxCommentBytes, "untrusted comment");
    checkOneLine(trustedComment, MaxTrustedCommentBytes, "trusted comment");
    std::array<unsigned char, SignatureBlobBytes> blob{};
    blob[0] = 'E';
    blob[1] = 'D';
    std::copy(key.keyId.begin(), key.keyId.end(), blob.begin() + 2);
    unsigned char *sig = blob.data() + 2 + KeyIdBytes;
    crypto_sign_detached(sig, nullptr, digest.data(), digest.size(), key.key.data());
    std::string global(sig, sig + SignatureBytes);
    global += trustedComment;
    std::array<unsigned char, SignatureBytes> globalSig{};
    crypto_sign_detached(globalSig.data(), nullptr, bytes(global), global.size(), key.key.data());
    return std::string(CommentPrefix) + untrustedComment + "\n" + toBase64(blob.data(), blob.size()) + "\n" +
           std::string(TrustedPrefix) + trustedComment + "\n" + toBase64(globalSig.data(), globalSig.size()) + "\n";
}

} // namespace

std::string sign(const SecretKey &key, std::string_view content, const std::string &trustedComment,
                 const std::string &untrustedComment)
{
    return signDigest(key, blake2b512(content), trustedComment, untrustedComment);
}

std::string signFile(const SecretKey &key, const std::filesystem::path &file, const std::string &trustedComment,
                     const std::string &untrustedComment)
{
    return signDigest(key, blake2b512File(file), trustedComment, untrustedComment);
}

std::string defaultTrustedComment(const std::filesystem::path &file)
{
    return "timestamp:" + std::to_string(static_cast<long long>(std::time(nullptr))) +
           "\tfile:" + file.filename().string() + "\thashed";
}

Signature parseSignature(std::string_view text, const std::string &source)
{
    initSodium();
    const auto lines = splitLines(text);
    if (lines.size() < 4)
        throw Error(source + ": not a minisign signature (it needs 4 lines, it has " + std::to_string(lines.size()) +
                    ")");
    if (lines[0].substr(0, CommentPrefix.size()) != CommentPrefix)
        throw Error(source + ": not a minisign signature (the first line must start with \"untrusted comment: \")");
    if (lines[2].substr(0, TrustedPrefix.size()) != TrustedPrefix)
        throw Error(source + ": not a minisign signature (the third line must start with \"trusted comment: \")");
    Signature s;
    s.untrustedComment = std::string(lines[0].substr(CommentPrefix.size()));
    s.trustedComment = std::string(lines[2].substr(TrustedPrefix.size()));
    const auto blob = fromBase64(trimRight(lines[1]), SignatureBlobBytes, "signature", source);
    if (blob[0] == 'E' && blob[1] == 'D')
        s.prehashed = true;
    else if (blob[0] == 'E' && blob[1] == 'd')
        s.prehashed = false;
    else
        throw Error(source + ": unsupported signature algorithm (expected \"ED\" or legacy \"Ed\")");
    std::copy(blob.begin() + 2, blob.begin() + 2 + KeyIdBytes, s.keyId.begin());
    std::copy(blob.begin() + 2 + KeyIdBytes, blob.end(), s.signature.begin());
    const auto global = fromBase64(trimRight(lines[3]), SignatureBytes, "global signature", source);
    std::copy(global.begin(), global.end(), s.globalSignature.begin());
    return s;
}

namespace {

Signature verifyParsed(const PublicKey &key, Signature s, const unsigned char *message, std::size_t size,
                       const std::string &source)
{
    if (s.keyId != key.keyId)
        throw Error(source + ": signed by key " + s.keyIdHex() + ", but the public key given is " + key.keyIdHex());
    if (crypto_sign_verify_detached(s.signature.data(), message, size, key.key.data()) != 0)
        throw Error(source + ": signature verification failed (the content was changed or was not signed by key " +
                    key.keyIdHex() + ")");
    std::string global(s.signature.begin(), s.signature.end());
    global += s.trustedComment;
    if (crypto_sign_verify_detached(s.globalSignature.data(), bytes(global), global.size(), key.key.data()) != 0)
        throw Error(source + ": the trusted comment's signature is invalid (the trusted comment was changed)");
    return s;
}

} // namespace

Signature verify(const PublicKey &key, std::string_view content, std::string_view signatureText,
                 const std::string &source)
{
    auto s = parseSignature(signatureText, source);
    if (!s.prehashed)
        return verifyParsed(key, std::move(s), bytes(content), content.size(), source);
    const auto digest = blake2b512(content);
    return verifyParsed(key, std::move(s), digest.data(), digest.size(), source);
}

Signature verifyFile(const PublicKey &key, const std::filesystem::path &file,
                     const std::optional<std::filesystem::path> &signatureFile)
{
    const auto sigPath = signatureFile ? *signatureFile : std::filesystem::path(file.string() + ".minisig");
    std::error_code ec;
    if (!std::filesystem::exists(sigPath, ec))
        throw Error(file.string() + " is not signed: its signature " + sigPath.string() + " does not exist");
    auto s = parseSignature(readWholeFile(sigPath), sigPath.string());
    if (!s.prehashed)
        return verify(key, readWholeFile(file), readWholeFile(sigPath), sigPath.string());
    const auto digest = blake2b512File(file);
    return verifyParsed(key, std::move(s), digest.data(), digest.size(), sigPath.string());
}

} // namespace dedloc::minisign
