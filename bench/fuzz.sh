#!/usr/bin/env bash
# bench/fuzz.sh [SECONDS_PER_TARGET] - fuzz every parser of bytes from the network or from files
# a stranger can hand over (bench/fuzz/FuzzTargets.h), each for SECONDS_PER_TARGET (default 60),
# with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer.
#
# Builds bench/fuzz (a project of its own) with clang in FUZZ_BUILD_DIR (default build-fuzz),
# installing clang and libFuzzer with apt when they are missing. Each target starts from its
# seeds (bench/fuzz/corpus/<target>/) and the inputs that once failed
# (tests/fuzz-regressions/<target>/); its corpus grows in FUZZ_BUILD_DIR/corpus/<target>/.
# Prints a table (target, executions, exec/s, coverage, crashes) and exits 1 when a target
# crashed, threw an undocumented exception or broke a sanitizer; the input that did it is saved as
# FUZZ_BUILD_DIR/crashes/<target>/crash-<sha1> (libFuzzer's log beside it, in logs/<target>.log).
#
# Environment: FUZZ_TARGETS (space-separated, default all), JOBS (build, default 2),
# DEDLOC_BUILD_LOCK (a file the build step holds with flock, for machines that share cores).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

SECONDS_PER_TARGET=${1:-60}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-2}
ALL_TARGETS="ShardHeader Payload ServiceMessage UpdateHeader DhtPayload DhtRecord RunManifest AccessToken MinisignKey MinisignSignature SealRelay MetricsRecord Checkpoint"
TARGETS=${FUZZ_TARGETS:-$ALL_TARGETS}

# The longest input worth trying per target: what its reader accepts at most, or a little more.
declare -A MAX_LEN=([ShardHeader]=1100 [Payload]=20000 [ServiceMessage]=16500 [UpdateHeader]=20000 [DhtPayload]=8192
  [DhtRecord]=66000 [RunManifest]=8192 [AccessToken]=600 [MinisignKey]=2048 [MinisignSignature]=9000
  [SealRelay]=70000 [MetricsRecord]=4200 [Checkpoint]=4096)

install_toolchain() {
  local fuzzer
  fuzzer=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -1 || true)
  command -v clang++ >/dev/null && [ -n "$fuzzer" ] && return 0
  local version sudo=""
  [ "$(id -u)" != 0 ] && sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends clang
  version=$(clang++ --version | sed -nE 's/.*clang version ([0-9]+).*/\1/p' | head -1)
  $sudo apt-get install -y -qq --no-install-recommends "libfuzzer-$version-dev" || true
}

build() {
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S bench/fuzz -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  local targets=()
  for t in $TARGETS; do targets+=(--target "fuzz_$t"); done
  ${DEDLOC_BUILD_LOCK:+flock "$DEDLOC_BUILD_LOCK"} cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
}

# run_target NAME: fuzzes one target; its result row goes to $BUILD_DIR/logs/NAME.row.
run_target() {
  local t=$1 corpus="$BUILD_DIR/corpus/$1" crashes="$BUILD_DIR/crashes/$1" log="$BUILD_DIR/logs/$1.log" rc=0
  mkdir -p "$corpus" "$crashes" "$BUILD_DIR/logs"
  for seeds in "bench/fuzz/corpus/$t" "tests/fuzz-regressions/$t"; do
    [ -d "$seeds" ] && find "$seeds" -type f -exec cp -f {} "$corpus/" \;
  done
  "$BUILD_DIR/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -max_len="${MAX_LEN[$t]:-4096}" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1 || rc=$?
  local runs cov ft speed found
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  speed=$(grep -oE 'exec/s: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  found=$(find "$crashes" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  [ "$rc" != 0 ] && [ "$found" = 0 ] && found="rc=$rc"
  printf '%s %s %s %s %s %s\n' "$t" "${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$found" >"$BUILD_DIR/logs/$t.row"
  return "$rc"
}

install_toolchain
build
failed=0
for t in $TARGETS; do
  echo "fuzz: $t for ${SECONDS_PER_TARGET} s" >&2
  run_target "$t" || { failed=1; echo "fuzz: $t failed; see $BUILD_DIR/logs/$t.log and $BUILD_DIR/crashes/$t/" >&2; }
done

echo
printf '| %-18s | %12s | %8s | %6s | %6s | %7s |\n' target executions exec/s cov ft crashes
printf '| %-18s | %12s | %8s | %6s | %6s | %7s |\n' ------------------ ----------: -------: ----: ----: ------:
for t in $TARGETS; do
  read -r name runs speed cov ft found <"$BUILD_DIR/logs/$t.row"
  printf '| %-18s | %12s | %8s | %6s | %6s | %7s |\n' "$name" "$runs" "$speed" "$cov" "$ft" "$found"
done
echo "clang: $(clang++ --version | head -1); ${SECONDS_PER_TARGET} s per target"
exit "$failed"
