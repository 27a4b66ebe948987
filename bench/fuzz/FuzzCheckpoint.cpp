// A checkpoint file (train/Checkpoint.h), as a monitor's archive or a volunteer's data directory
// may receive one. The input is the file without its trailer: the target appends the SHA-256
// the reader checks first, so the fuzzer reaches the header and tensor checks behind it.
// readCheckpointFile reads a path, so each input is written to a file of this process first.
#include "FuzzTargets.h"

#include "train/Checkpoint.h"
#include "util/Error.h"
#include "util/Hash.h"

#include <fstream>
#include <string>
#include <unistd.h>

namespace dedloc::fuzz {

namespace {

std::filesystem::path scratchFile()
{
    const std::filesystem::path shm = "/dev/shm";
    const auto dir = std::filesystem::is_directory(shm) ? shm : std::filesystem::temp_directory_path();
    return dir / ("dedloc-fuzz-checkpoint-" + std::to_string(::getpid()) + ".ddlc");
}

} // namespace

int fuzzCheckpoint(const std::uint8_t *data, std::size_t size)
{
    static const std::filesystem::path file = scratchFile();
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
        out << sha256Hex(data, size);
    }
    try {
        (void)readCheckpointFile(file);
    } catch (const Error &) {
        // A refused checkpoint.
    }
    return 0;
}

} // namespace dedloc::fuzz
