#!/usr/bin/env bash
# The architecture of docs/ARCHITECTURE.md, checked on the tree and the build:
#   1. who may include whom: every #include "folder/..." of core/ and ui/ follows the layer table
#      below (so there are no folder loops), nothing in core/averaging includes libtorch, and the
#      wire format (averaging/SwarmMessages, with PeerRole) includes no averaging
#      algorithm;
#   2. sizes: no source file over 500 lines; no function over 120 lines in core/averaging;
#   3. comments speak of the repository: no "issue N", no paths outside it (../shared);
#   4. links: the window's library pulls in no ZeroMQ, OpenDHT or libtorch; a DEDLOC_GUI=OFF
#      build finds and links no Qt Widgets, Charts or Svg (a GUI build configures one aside and
#      reads its dedloc_headless_probe, dedloc's objects linked as that build links them);
#   5. docs/ARCHITECTURE.md and the README's layout table name every folder of core/.
# Usage: tst_architecture.sh SOURCE_DIR DEDLOC_BINARY GUI(ON|OFF) UI_PROBE_BINARY|- HEADLESS_BINARY
set -uo pipefail
src=$1 dedloc=$2 gui=$3 probe=$4 headless=$5
build=$(dirname "$(dirname "$dedloc")")
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- 1. Layers: a folder may include itself and the folders listed for it.
declare -A allowed=(
  [util]=""
  [security]="util"
  [compress]="util"
  [model]="util"
  [run]="util security compress model"
  [system]="util"
  [net]="util security compress run"
  [averaging]="util security compress run net"
  [face]="averaging/PeerRole.h"
  [monitor]="util security compress run net averaging face"
  [train]="util security compress model run system net face"
  [eval]="util model run train"
  [peer]="util security compress model run system net averaging face monitor train eval"
  [ui]="util run system face"
)
for dir in "$src"/core/*/; do
  d=$(basename "$dir")
  [ -n "${allowed[$d]+x}" ] || fail "core/$d is not in the layer table (docs/ARCHITECTURE.md and this test)"
done
check_includes() { # folder, files...
  local from=$1; shift
  local line target folder ok
  while IFS= read -r line; do
    target=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${line#*:}")
    [[ $target == */* ]] || continue                  # same folder (ui's own headers)
    folder=${target%%/*}
    [ "$folder" = "$from" ] && continue
    [ -d "$src/core/$folder" ] || continue            # ui/panels/..., test support
    ok=0
    for a in ${allowed[$from]}; do
      { [ "$a" = "$folder" ] || [ "$a" = "$target" ]; } && ok=1
    done
    [ $ok = 1 ] || fail "${line%%:*} includes $target: $from may include only: ${allowed[$from]:-nothing}"
  done < <(grep -Hn '^#include "' "$@" /dev/null)
}
for dir in "$src"/core/*/; do
  d=$(basename "$dir")
  check_includes "$d" "$dir"*.h "$dir"*.cpp
done
check_includes ui $(find "$src/ui" -name '*.h' -o -name '*.cpp')
if grep -nE '#include "averaging/' "$src"/core/averaging/SwarmMessages.{h,cpp} | grep -vE 'SwarmMessages.h"|PeerRole.h"'; then
  fail "the wire format (averaging/SwarmMessages) includes an averaging algorithm: the algorithms include the format"
fi
if grep -rnE '#include *[<"](torch|ATen|c10)/' "$src/core/averaging"; then
  fail "core/averaging includes libtorch (it must stay torch-free)"
fi
for f in $(find "$src/ui" -name '*.h' -o -name '*.cpp'); do
  grep -HnE '#include *[<"](zmq|opendht|torch|ATen)' "$f" && fail "$f includes the network or torch"
done

# --- 2. Sizes.
while IFS= read -r f; do
  n=$(wc -l <"$f")
  [ "$n" -le 500 ] || fail "${f#$src/} has $n lines (at most 500)"
done < <(find "$src/core" "$src/ui" "$src/app" "$src/tests" "$src/bench" -name '*.cpp' -o -name '*.h')
# Functions: the project's style puts a function's braces alone in column 0.
for f in "$src"/core/averaging/*.cpp; do
  awk -v file="${f#$src/}" '
    /^\{$/ { start = NR; next }
    /^\}$/ && start { if (NR - start - 1 > 120) printf "FAIL: %s:%d: a function of %d lines (at most 120)\n", file, start, NR - start - 1; start = 0 }
  ' "$f"
done | tee /tmp/dedloc-arch-functions.$$ | grep . && failures=$((failures + $(wc -l </tmp/dedloc-arch-functions.$$)))
rm -f /tmp/dedloc-arch-functions.$$

# --- 3. Comments speak of the repository.
if grep -rnEi '(//|#).*(\bissue [0-9]+|\(issue [0-9]|shared/design|\.\./shared|METHOD\.md|STYLE\.md|[^/]ARCHITECTURE\.md)' \
     --include='*.cpp' --include='*.h' --include='CMakeLists.txt' --include='*.cmake' --include='*.sh' \
     "$src/core" "$src/ui" "$src/app" "$src/tests" "$src/bench" "$src/CMakeLists.txt" "$src/cmake" \
     | grep -v 'tst_architecture.sh'; then
  fail "sources cite issue numbers or files outside the repository (point to docs/ instead)"
fi

# --- 4. Links.
needed() { readelf -d "$1" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p'; }
if [ "$probe" != "-" ]; then
  libs=$(needed "$probe") || fail "cannot read $probe"
  grep -q 'libQt6Widgets' <<<"$libs" || fail "the ui probe does not link Qt Widgets: the check below would prove nothing"
  bad=$(grep -E 'libzmq|libopendht|libtorch|libc10' <<<"$libs")
  [ -z "$bad" ] || fail "the window's library links $(tr '\n' ' ' <<<"$bad")"
fi
# The headless dedloc: the build's own with DEDLOC_GUI=OFF, else the probe linked like it.
bad=$(needed "$headless" | grep -E 'libQt6(Widgets|Charts|Svg|Gui)')
[ -z "$bad" ] || fail "dedloc of a DEDLOC_GUI=OFF build links $(tr '\n' ' ' <<<"$bad")"
if [ "$gui" = OFF ]; then
  offbuild=$build
else
  needed "$dedloc" | grep -q libQt6Widgets || fail "dedloc of a DEDLOC_GUI=ON build has no window library"
  # What a DEDLOC_GUI=OFF configuration looks for and links: configured (not built) aside.
  offbuild=$(mktemp -d)
  trap 'rm -rf "$offbuild"' EXIT
  cmake -S "$src" -B "$offbuild" -G Ninja -DDEDLOC_GUI=OFF >"$offbuild/configure.log" 2>&1 \
    || fail "a DEDLOC_GUI=OFF build does not configure: $(tail -5 "$offbuild/configure.log")"
fi
grep -qE 'libQt6(Widgets|Charts|Svg)' "$offbuild/build.ninja" && fail "a DEDLOC_GUI=OFF build links Qt Widgets, Charts or Svg somewhere"
grep -qE '^Qt6(Widgets|Charts|Svg)_DIR:' "$offbuild/CMakeCache.txt" && fail "a DEDLOC_GUI=OFF build looked for Qt Widgets, Charts or Svg"

# --- 5. The documents name every folder of core/.
for dir in "$src"/core/*/; do
  d=$(basename "$dir")
  grep -q "core/$d" "$src/docs/ARCHITECTURE.md" || fail "docs/ARCHITECTURE.md does not describe core/$d"
  grep -qE "^\| *\`?(core/)?$d/?\`? *\|" "$src/README.md" || fail "the README's layout table has no row for core/$d"
done

if [ "$failures" -gt 0 ]; then
  echo "$failures architecture check(s) failed"
  exit 1
fi
echo "architecture: layers, sizes, comments, links and documents as docs/ARCHITECTURE.md says"
