// libFuzzer's entry point for one target: the build compiles this file once per target with
// DEDLOC_FUZZ_TARGET naming its function (bench/fuzz/CMakeLists.txt).
#include "FuzzTargets.h"

#ifndef DEDLOC_FUZZ_TARGET
#error "DEDLOC_FUZZ_TARGET must name a function of FuzzTargets.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    return dedloc::fuzz::DEDLOC_FUZZ_TARGET(data, size);
}
