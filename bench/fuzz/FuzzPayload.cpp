// The data plane's payload frame (compress/Compression.h): decode() of every codec. The input is
// the codec (first byte, an index into the codecs), the element count (2 bytes, little-endian)
// and the payload. A decoded value may be non-finite (the reducers check); nothing else may go
// wrong: the codec throws dedloc::Error for a payload that is not one encoding of that count.
#include "FuzzTargets.h"

#include "compress/Compression.h"
#include "util/Error.h"

#include <array>
#include <vector>

namespace dedloc::fuzz {

int fuzzPayload(const std::uint8_t *data, std::size_t size)
{
    static constexpr std::array codecs{Compression::None,         Compression::Fp16,     Compression::Uniform8Bit,
                                       Compression::Blockwise8Bit, Compression::SizeAdaptive, Compression::TopK4Bit,
                                       Compression::SparseFp16};
    if (size < 3)
        return 0;
    const auto codec = codecs[data[0] % codecs.size()];
    std::vector<float> out(static_cast<std::size_t>(data[1] | (data[2] << 8)));
    const std::span<const std::uint8_t> payload(data + 3, size - 3);
    try {
        const auto length = encodedLength(codec, payload, out.size());
        if (length > payload.size())
            throw std::logic_error("encodedLength() past the end of the bytes");
        decode(codec, payload, out);
    } catch (const Error &) {
        // A refused payload: the reducer drops the message.
    }
    return 0;
}

} // namespace dedloc::fuzz
