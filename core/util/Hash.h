#pragma once
// SHA-256 (FIPS 180-4, via libsodium's crypto_hash_sha256) of files and byte ranges, as lowercase
// hex. Used for the run manifest's file hashes and the checkpoint trailer.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace dedloc {

// Throws dedloc::Error naming the file when it cannot be read.
[[nodiscard]] std::string sha256File(const std::filesystem::path &path);
[[nodiscard]] std::string sha256Hex(const void *data, std::size_t bytes);
[[nodiscard]] std::string toHex(const unsigned char *data, std::size_t bytes);

// Incremental SHA-256 for streams (checkpoints hash while they write).
class Sha256 final {
public:
    Sha256();
    void update(const void *data, std::size_t bytes);
    [[nodiscard]] std::string finalHex();

private:
    alignas(64) unsigned char m_state[128];
};

} // namespace dedloc
