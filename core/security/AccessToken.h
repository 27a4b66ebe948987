#pragma once
// Access tokens for closed runs: the lead binds a peer's Ed25519 identity key (net/PeerIdentity.h)
// to a display name, a run and a validity period, signed with the lead key (the same Ed25519 key
// as the minisign lead key, security/Minisign.h). The data-plane handshake checks them
// (net/CurveSecurity.h).
//
// Encoding (version 1): "dlt1." + base64url without padding (RFC 4648 section 5) of
//   body = "DLT1" (4) | lead key id (8, as in the minisign key) | peer Ed25519 public key (32) |
//          issued at (i64 LE, Unix seconds) | expires at (i64 LE, Unix seconds) |
//          run id length (u8, 1..64) | run id | name length (u8, 1..64) | name (UTF-8)
//   then signature (64) = Ed25519(lead secret key, "dedloc-access-token-v1\n" | body).
// The domain prefix keeps a token signature from ever verifying as a minisign signature (which
// signs a 64-byte BLAKE2b digest) and vice versa. A token is at most 259 bytes (~350 characters).
//
// Verification (verifyAccessToken) checks, in order: the format; the lead key id; the signature;
// the run id; the validity period with a clock-skew allowance of ClockSkewSeconds on both ends
// (peers' clocks drift; a token is accepted from issuedAt - skew to expiresAt + skew). The
// binding to the presenting peer is checked separately (checkTokenBinding) because only the
// handshake knows who presents it. Every refusal throws dedloc::Error naming the reason.
// Thread-safety: pure functions; any thread.
#include "security/Minisign.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace dedloc {

constexpr std::int64_t ClockSkewSeconds = 300;

using Ed25519PublicKey = std::array<unsigned char, 32>;

struct AccessToken {
    minisign::KeyId leadKeyId{};
    Ed25519PublicKey peerKey{};
    std::int64_t issuedAt = 0;  // Unix seconds
    std::int64_t expiresAt = 0; // Unix seconds
    std::string runId;
    std::string name;
};

// Signs and encodes. Throws on an empty or over-long run id or name, or expiresAt <= issuedAt.
[[nodiscard]] std::string issueAccessToken(const minisign::SecretKey &lead, const std::string &runId,
                                           const Ed25519PublicKey &peerKey, const std::string &name,
                                           std::int64_t issuedAt, std::int64_t expiresAt);

// Decodes without checking the signature (for display). Throws on a malformed token.
[[nodiscard]] AccessToken decodeAccessToken(std::string_view token);

// Full check against the lead key, the run and the current time (Unix seconds).
AccessToken verifyAccessToken(std::string_view token, const minisign::PublicKey &lead, const std::string &runId,
                              std::int64_t nowSeconds, std::int64_t skewSeconds = ClockSkewSeconds);

// Throws unless the token was issued to `presentedKey`.
void checkTokenBinding(const AccessToken &token, const Ed25519PublicKey &presentedKey);

// 64 hex digits -> key; throws with a clear message otherwise.
[[nodiscard]] Ed25519PublicKey parsePeerKeyHex(const std::string &hex);

} // namespace dedloc
