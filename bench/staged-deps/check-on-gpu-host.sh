#!/usr/bin/env bash
# check-on-gpu-host.sh - on a GPU machine that is not Debian (see stage.sh): unpack the staged
# Debian packages under PREFIX, point pkg-config, CMake and the linker at them (the programs find
# them through their RPATH, so nothing else on the machine loads them), and run
# bench/cuda_check.sh against python3's PyTorch libtorch. The results are packed into one file.
#
# Usage (in the repository root): bench/staged-deps/check-on-gpu-host.sh DEPS_TAR RESULT_DIR [SECONDS]
#   PREFIX  where to unpack (default /opt/dedloc-deps)
set -uo pipefail
deps_tar=${1:?usage: check-on-gpu-host.sh DEPS_TAR RESULT_DIR [SECONDS]}
result=${2:?usage: check-on-gpu-host.sh DEPS_TAR RESULT_DIR [SECONDS]}
P=${PREFIX:-/opt/dedloc-deps}
mkdir -p "$P" "$result" && tar -xJf "$deps_tar" -C "$P" || { echo "cannot unpack $deps_tar into $P"; exit 1; }
L=$P/usr/lib/x86_64-linux-gnu
# CMake's package files check that every file they import exists, also tools the build never
# runs (qmake, androiddeployqt); put a stub that fails loudly where one was not staged.
for f in "$L"/cmake/*/*Targets-*.cmake; do
  sed -n 's/.*IMPORTED_LOCATION[A-Z_]* "${_IMPORT_PREFIX}\(\/[^"]*\)".*/\1/p' "$f"
done | sort -u | while read -r rel; do
  [ -e "$P/usr$rel" ] && continue
  mkdir -p "$(dirname "$P/usr$rel")"
  printf '#!/bin/sh\necho "%s: not staged for this build" >&2\nexit 1\n' "$rel" >"$P/usr$rel"
  chmod +x "$P/usr$rel"
done
export PKG_CONFIG=$P/usr/bin/pkgconf
export PKG_CONFIG_LIBDIR=$L/pkgconfig:$P/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$P
export CMAKE_PREFIX_PATH=$P/usr
# Likewise for include folders that .pc files name but that hold no header the build reads.
for pc in "$L"/pkgconfig/*.pc "$P"/usr/share/pkgconfig/*.pc; do
  [ -e "$pc" ] && "$PKG_CONFIG" --cflags-only-I "$(basename "$pc" .pc)" 2>/dev/null
done | tr ' ' '\n' | sed -n 's/^-I//p' | sort -u | while read -r dir; do mkdir -p "$dir"; done
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
# DT_RPATH (not RUNPATH): it also serves the staged libraries' own dependencies.
lf="-Wl,--disable-new-dtags,-rpath,$L,-rpath-link,$L"
# -isystem, not -idirafter: a header of the same name on the host (another SentencePiece, say) must
# not shadow the staged one, whose library the programs load.
export DEDLOC_CMAKE_ARGS="-DCMAKE_CXX_FLAGS=-isystem$P/usr/include -DCMAKE_EXE_LINKER_FLAGS=$lf -DCMAKE_SHARED_LINKER_FLAGS=$lf -DCMAKE_MODULE_LINKER_FLAGS=$lf"
{ head -3 /etc/os-release; gcc --version | head -1; cmake --version | head -1; nvcc --version | tail -2
  echo "the host's own SentencePiece and protobuf files (the staged ones must win):"
  find / -xdev \( -name 'sentencepiece_processor.h' -o -name 'libsentencepiece*.so*' -o -name 'repeated_field.h' \) \
    -not -path "$P/*" 2>/dev/null | head -20
  echo "g++ links libstdc++ statically? $(g++ -dumpspecs 2>/dev/null | grep -c static-libstdc) spec mentions"; } 2>&1
[ -d "$P/usr/lib/debian-runtime" ] && export FALLBACK_LIBDIR=$P/usr/lib/debian-runtime
work=$(mktemp -d)
bench/cuda_check.sh "$work" "${3:-75}"
cp "$work/summary.txt" "$result/summary.txt"
tar -C "$work" -czf "$result/cuda-check.tgz" .
if ! [ -x "${BUILD_DIR:-build-cuda}/bench/bench_train_step" ]; then # the headers, to fix the build elsewhere
  T=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
  tar -C "$T" -cf - include share/cmake | xz -T0 -3 >"$result/torch-headers.tar.xz"
fi
ls -la "$result"
