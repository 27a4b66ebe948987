#pragma once
// Forced into compress/Compression.cpp by the fuzz build: clang 14's __builtin_cpu_supports
// knows no "f16c", so the codec takes its portable fp16 path there (the one without F16C).
#define __builtin_cpu_supports(feature) 0
