// A checkpoint file (train/CheckpointFormat.h, the parser behind train/Checkpoint.h's reader), as
// a monitor's archive or a volunteer's data directory may receive one. The input is the file
// without its trailer: the target appends the SHA-256 the parser checks first, so the fuzzer
// reaches the header and tensor checks behind it. Each tensor it accepts is read whole, as the
// reader copies it into a tensor, so an entry that points outside the input shows under ASan.
#include "FuzzTargets.h"

#include "train/CheckpointFormat.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <string>

namespace dedloc::fuzz {

int fuzzCheckpoint(const std::uint8_t *data, std::size_t size)
{
    std::string file(reinterpret_cast<const char *>(data), size);
    file += sha256Hex(data, size);
    try {
        const auto layout = parseCheckpoint(file, "fuzz input");
        volatile unsigned char sum = 0;
        for (const auto &t : layout.tensors)
            for (std::size_t i = 0; i < t.bytes; ++i)
                sum = static_cast<unsigned char>(sum + static_cast<unsigned char>(file.at(t.offset + i)));
    } catch (const Error &) {
        // A refused checkpoint.
    }
    return 0;
}

} // namespace dedloc::fuzz
