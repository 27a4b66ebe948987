#pragma once
// Ed25519 keys and signatures in the minisign formats, implemented with libsodium, so a project
// lead can use Debian's `minisign` and `dedloc-lead` interchangeably.
//
// Formats (minisign 0.11, https://jedisct1.github.io/minisign/, src/minisign.h of
// github.com/jedisct1/minisign). Every multi-byte integer is little-endian; base64 is the
// standard alphabet with padding; every file is text lines ending in "\n".
//
//   public key file  "untrusted comment: <text>\n" + base64(42 bytes) + "\n"
//                    42 bytes = "Ed" | key id (8) | Ed25519 public key (32)
//   secret key file  "untrusted comment: <text>\n" + base64(158 bytes) + "\n"
//                    158 bytes = "Ed" | kdf "Sc" (scrypt) or 00 00 (none) | "B2" |
//                    salt (32) | opslimit (u64) | memlimit (u64) |
//                    [key id (8) | Ed25519 secret key (64) | checksum (32)]
//                    checksum = BLAKE2b-256("Ed" | key id | secret key). With kdf "Sc" the
//                    bracketed 104 bytes are XORed with crypto_pwhash_scryptsalsa208sha256(
//                    password, salt, opslimit, memlimit) of 104 bytes. An unencrypted key made
//                    by `minisign -G -W` carries an all-zero checksum; both forms are accepted.
//   signature file   "untrusted comment: <text>\n" + base64(74 bytes) + "\n" +
//                    "trusted comment: <text>\n" + base64(global signature, 64 bytes) + "\n"
//                    74 bytes = "ED" | key id (8) | Ed25519 signature of BLAKE2b-512(content)
//                    (legacy "Ed": signature of the content itself; verified, never written)
//                    global signature = Ed25519 signature of (signature (64) | trusted comment).
//
// The key id is 8 random bytes; minisign prints it as 16 uppercase hex digits of the id read as
// a little-endian integer (so the bytes appear reversed): keyIdHex() does the same.
//
// Errors: every malformed file, wrong password, unknown algorithm and failed verification
// throws dedloc::Error with a sentence naming the file (the `source` argument) and the reason.
// Thread-safety: free functions without shared state; any thread.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dedloc::minisign {

constexpr std::size_t KeyIdBytes = 8;
constexpr std::size_t PublicKeyBytes = 32;
constexpr std::size_t SecretKeyBytes = 64;
constexpr std::size_t SignatureBytes = 64;
constexpr std::size_t MaxCommentBytes = 1000;        // minisign reads 1024-byte lines
constexpr std::size_t MaxTrustedCommentBytes = 8000; // minisign: 8192 with the prefix

using KeyId = std::array<unsigned char, KeyIdBytes>;

struct PublicKey {
    KeyId keyId{};
    std::array<unsigned char, PublicKeyBytes> key{};
    // 16 uppercase hex digits as minisign prints them (little-endian integer).
    [[nodiscard]] std::string keyIdHex() const;
    bool operator==(const PublicKey &) const = default;
};

// Holds the Ed25519 secret key (seed | public key); wiped on destruction.
struct SecretKey {
    KeyId keyId{};
    std::array<unsigned char, SecretKeyBytes> key{};
    SecretKey() = default;
    SecretKey(const SecretKey &) = default;
    SecretKey &operator=(const SecretKey &) = default;
    ~SecretKey();
    [[nodiscard]] PublicKey publicKey() const;
};

struct KeyPair {
    PublicKey publicKey;
    SecretKey secretKey;
};

// scrypt cost written into password-protected secret keys. The default is minisign's
// (crypto_pwhash_scryptsalsa208sha256 *_SENSITIVE: 2^25 operations, 1 GiB, ~6 s here); tests
// use interactive() (2^19, 16 MiB) to stay fast. Readers take the cost from the file.
struct KdfCost {
    std::uint64_t opsLimit = 33554432;
    std::uint64_t memLimit = 1073741824;
    [[nodiscard]] static KdfCost interactive() { return {524288, 16777216}; }
};

[[nodiscard]] KeyPair generateKeyPair();

// --- public keys -------------------------------------------------------------------------
// "untrusted comment: minisign public key <KEYID>\n<base64>\n"
[[nodiscard]] std::string formatPublicKey(const PublicKey &key);
// Accepts a whole public key file or the bare base64 line (what `minisign -P` takes).
[[nodiscard]] PublicKey parsePublicKey(std::string_view text, const std::string &source);
[[nodiscard]] PublicKey loadPublicKey(const std::filesystem::path &file);
// The 56-character base64 line alone.
[[nodiscard]] std::string publicKeyBase64(const PublicKey &key);

// --- secret keys -------------------------------------------------------------------------
// Without a password the key is stored unencrypted (kdf 00 00), like `minisign -G -W`.
[[nodiscard]] std::string formatSecretKey(const SecretKey &key, const std::optional<std::string> &password,
                                          const KdfCost &cost = {});
// `password` is required when the file is encrypted ("Sc"); a wrong password fails the checksum
// and is reported as such. An unencrypted file ignores it.
[[nodiscard]] SecretKey parseSecretKey(std::string_view text, const std::optional<std::string> &password,
                                       const std::string &source);
[[nodiscard]] SecretKey loadSecretKey(const std::filesystem::path &file, const std::optional<std::string> &password);
// True when the file's kdf is scrypt (a password is needed). Throws on a malformed file.
[[nodiscard]] bool secretKeyIsEncrypted(std::string_view text, const std::string &source);

// Writes both files (secret key mode 0600). Refuses to overwrite an existing file unless
// `overwrite`; creates missing parent directories.
void writeKeyPair(const KeyPair &pair, const std::filesystem::path &publicFile, const std::filesystem::path &secretFile,
                  const std::optional<std::string> &password, const KdfCost &cost = {}, bool overwrite = false);

// --- signatures ----------------------------------------------------------------------------
struct Signature {
    bool prehashed = true; // "ED"; false for legacy "Ed"
    KeyId keyId{};
    std::array<unsigned char, SignatureBytes> signature{};
    std::string untrustedComment;
    std::string trustedComment;
    std::array<unsigned char, SignatureBytes> globalSignature{};
    [[nodiscard]] std::string keyIdHex() const;
};

// BLAKE2b-512 (crypto_generichash, 64-byte output, no key) of the content / of a file, streamed.
[[nodiscard]] std::array<unsigned char, 64> blake2b512(std::string_view content);
[[nodiscard]] std::array<unsigned char, 64> blake2b512File(const std::filesystem::path &file);

// Prehashed signature of `content` with the given comments (one line each, no "\n" or "\r",
// at most MaxCommentBytes / MaxTrustedCommentBytes). Returns the signature file's text.
[[nodiscard]] std::string sign(const SecretKey &key, std::string_view content, const std::string &trustedComment,
                               const std::string &untrustedComment = "signature from dedloc-lead secret key");
// The same over a file's bytes, streamed (any size).
[[nodiscard]] std::string signFile(const SecretKey &key, const std::filesystem::path &file,
                                   const std::string &trustedComment,
                                   const std::string &untrustedComment = "signature from dedloc-lead secret key");
// minisign's default trusted comment: "timestamp:<unix seconds>\tfile:<basename>\thashed".
[[nodiscard]] std::string defaultTrustedComment(const std::filesystem::path &file);

[[nodiscard]] Signature parseSignature(std::string_view text, const std::string &source);

// Checks, in this order: key id of the signature == key id of `key`; the signature over the
// content (BLAKE2b-512 of it for "ED", the content for legacy "Ed"); the global signature over
// signature | trusted comment. Returns the verified signature (its trusted comment is now
// trustworthy); throws dedloc::Error naming `source` and the failed check otherwise.
Signature verify(const PublicKey &key, std::string_view content, std::string_view signatureText,
                 const std::string &source);
// `signatureFile` defaults to "<file>.minisig". A missing signature file is its own message.
Signature verifyFile(const PublicKey &key, const std::filesystem::path &file,
                     const std::optional<std::filesystem::path> &signatureFile = std::nullopt);

} // namespace dedloc::minisign
