#!/usr/bin/env bash
# shim-variants.sh BUILD_DIR [INCLUDE_DIR LIB_DIR]: where the SentencePiece shim of BUILD_DIR
# fails on a host, build it again in several ways and say which loads the bundled tokenizer
# (through shim_probe.cpp, the way the app loads it), with the staged headers searched after the
# host's (-idirafter) and before them (-I). Prints one line per variant; changes
# nothing in BUILD_DIR. Run in the repository root.
#   INCLUDE_DIR, LIB_DIR  SentencePiece's headers and libraries (default: the staged prefix of
#                         check-on-gpu-host.sh, /opt/dedloc-deps/usr/{include,lib/x86_64-linux-gnu})
set -uo pipefail
build=${1:?usage: shim-variants.sh BUILD_DIR [INCLUDE_DIR LIB_DIR]}
inc=${2:-/opt/dedloc-deps/usr/include}
lib=${3:-/opt/dedloc-deps/usr/lib/x86_64-linux-gnu}
model=resources/default-run/tokenizer.model
work=$(mktemp -d)
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
probe() { # probe NAME MODULE
  printf '%-40s ' "$1"
  [ -f "$2" ] || { echo "not built"; return; }
  printf 'needs [%s] exports %s: ' "$(readelf -d "$2" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')" \
    "$(nm -D --defined-only "$2" | wc -l)"
  timeout 20 "$work/probe" "$2" "$model" 2>&1 | tail -1
}
g++ -O1 -o "$work/probe" bench/staged-deps/shim_probe.cpp -ldl || { echo "cannot build the probe"; exit 1; }
echo "build's compiler: ${cxx:-?}; g++ on PATH: $(command -v g++); others: $(ls /usr/bin/g++* 2>/dev/null | tr '\n' ' ')"
probe "the build's shim" "$build/lib/libdedloc_sentencepiece.so"
rpath="-Wl,--disable-new-dtags,-rpath,$lib"
for incflag in -idirafter -I; do
for compiler in "${cxx:-g++}" /usr/bin/g++; do
  [ -x "$compiler" ] || command -v "$compiler" >/dev/null || continue
  for flags in "-O3 -fvisibility=hidden" "-O1" "-O3 -fvisibility=hidden -std=c++17" \
               "-O3 -fvisibility=hidden -static-libstdc++ -Wl,--exclude-libs,ALL" \
               "-O3 -fvisibility=hidden -Wl,--exclude-libs,ALL"; do
    out="$work/shim-$(echo "$incflag $compiler $flags" | tr -c 'a-zA-Z0-9' _).so"
    "$compiler" -std=c++20 -fPIC -shared $flags -Icore $incflag "$inc" core/model/SentencePieceShim.cpp -o "$out" \
      -L"$lib" $rpath -Wl,--no-as-needed -lsentencepiece -lsentencepiece_train -lstdc++ 2>"$out.log" \
      || { echo "$incflag $compiler $flags: does not build: $(head -c 300 "$out.log")"; continue; }
    probe "$incflag $compiler $flags" "$out"
  done
done
done
rm -rf "$work"
