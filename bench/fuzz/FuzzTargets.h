#pragma once
// Fuzz targets for every parser of bytes that come from the network or from a file a stranger
// can hand over (bench/fuzz.sh runs them under libFuzzer; tests/tst_fuzzregressions.cpp replays
// their seeds and the inputs that once failed).
//
// Each fuzzXxx feeds `size` bytes at `data` to one parser and swallows only the error type that
// parser's header documents (ProtocolError for the wire, dedloc::Error for files and tokens).
// Any other exception escapes: libFuzzer reports it as a crash, the regression test as a failure.
// Every target returns 0. Threads: one call at a time per target (some keep fixed state).
#include <cstddef>
#include <cstdint>

namespace dedloc::fuzz {

int fuzzShardHeader(const std::uint8_t *data, std::size_t size);     // net/WireMessage
int fuzzPayload(const std::uint8_t *data, std::size_t size);         // compress/Compression (every codec)
int fuzzServiceMessage(const std::uint8_t *data, std::size_t size);  // averaging/SwarmMessages (service)
int fuzzUpdateHeader(const std::uint8_t *data, std::size_t size);    // averaging/UpdateArchive, AveragedUpdate
int fuzzDhtPayload(const std::uint8_t *data, std::size_t size);      // averaging/SwarmMessages (DHT payloads)
int fuzzDhtRecord(const std::uint8_t *data, std::size_t size);       // net/DhtNode (record decoding)
int fuzzRunManifest(const std::uint8_t *data, std::size_t size);     // run/RunManifest
int fuzzAccessToken(const std::uint8_t *data, std::size_t size);     // security/AccessToken
int fuzzMinisignKey(const std::uint8_t *data, std::size_t size);     // security/Minisign (key files)
int fuzzMinisignSignature(const std::uint8_t *data, std::size_t size); // security/Minisign (signatures)
int fuzzSealRelay(const std::uint8_t *data, std::size_t size);       // averaging/SealRelay, GroupMerge records
int fuzzMetricsRecord(const std::uint8_t *data, std::size_t size);   // monitor/SwarmMetricsRecorder
int fuzzCheckpoint(const std::uint8_t *data, std::size_t size);      // train/CheckpointFormat

} // namespace dedloc::fuzz
