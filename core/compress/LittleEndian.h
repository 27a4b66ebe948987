#pragma once
// Little-endian reads and writes of the codecs' fixed-width fields (compress/Compression.h).
#include <bit>
#include <cstdint>

namespace dedloc::le {

inline void putU16(std::uint8_t *p, std::uint16_t v)
{
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
}

inline std::uint16_t getU16(const std::uint8_t *p)
{
    return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

inline void putF32(std::uint8_t *p, float v)
{
    const auto bits = std::bit_cast<std::uint32_t>(v);
    for (int i = 0; i < 4; ++i)
        p[i] = static_cast<std::uint8_t>(bits >> (8 * i));
}

inline float getF32(const std::uint8_t *p)
{
    std::uint32_t bits = 0;
    for (int i = 0; i < 4; ++i)
        bits |= static_cast<std::uint32_t>(p[i]) << (8 * i);
    return std::bit_cast<float>(bits);
}

} // namespace dedloc::le
