#!/usr/bin/env bash
# cuda_check.sh - build DeDLOC Desktop against an official CUDA libtorch and measure it on a GPU:
#   1. configure and build (headless) with -DCMAKE_PREFIX_PATH=<libtorch>;
#   2. the trainer's device tests, among them the GPU step against the CPU's (skipped without a GPU);
#   3. bench_train_step on cuda:0 (bf16 autocast), then on the CPU of the same machine;
#   4. the bundled run: one peer alone, then a local swarm of two trainers, on the GPU.
# Every stage runs even when an earlier one failed, so that one pass shows all that is wrong.
# Logs, metrics and a summary go to OUT_DIR. CI does not run this (it has no GPU).
#
# Usage: bench/cuda_check.sh OUT_DIR [SECONDS_PER_RUN]
# Environment:
#   LIBTORCH          libtorch's CMake prefix (default: that of python3's torch package)
#   BUILD_DIR         default build-cuda
#   JOBS              ninja -j (default: the number of cores)
#   DEDLOC_CMAKE_ARGS more arguments for cmake (a word list)
#   FALLBACK_LIBDIR   where the tokenizer test fails, rerun it with this LD_LIBRARY_PATH (the
#                     build platform's C++ runtime) and keep it for the later stages if that passes
#   SKIP_STAGES       stage names to leave out, an extended regex (bench-cpu|swarm)
#   DEADLINE_S        stop every stage by this many seconds after the start (default: none), so a
#                     caller with a hard limit still gets the logs of what ran
set -uo pipefail

out=${1:?usage: bench/cuda_check.sh OUT_DIR [SECONDS_PER_RUN]}
seconds=${2:-75}
build=${BUILD_DIR:-build-cuda}
jobs=${JOBS:-$(nproc)}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
note() { echo "== $*" | tee -a "$summary"; }
stage() { # stage NAME TIMEOUT COMMAND...: runs COMMAND into $out/NAME.log, notes its exit status
  local name=$1 limit=$2
  shift 2
  if [ -n "${SKIP_STAGES:-}" ] && [[ $name =~ ^($SKIP_STAGES)$ ]]; then
    note "$name: skipped (SKIP_STAGES)"
    return 125
  fi
  if [ -n "${DEADLINE_S:-}" ]; then
    local left=$((DEADLINE_S - SECONDS))
    if [ "$left" -lt 15 ]; then
      note "$name: skipped, the deadline is reached"
      return 124
    fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  note "$name: exit $rc after $((SECONDS - start)) s"
  return $rc
}

if [ -z "${LIBTORCH:-}" ]; then
  LIBTORCH=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || true
fi
note "libtorch: ${LIBTORCH:-not found}"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tee -a "$summary"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$summary"
note "cores: $(nproc)"

# shellcheck disable=SC2086 # DEDLOC_CMAKE_ARGS is a word list
stage configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEDLOC_GUI=OFF \
  -DCMAKE_PREFIX_PATH="$LIBTORCH${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}" ${DEDLOC_CMAKE_ARGS:-}
grep -i "torch\|cuda" "$out/configure.log" | head -20 >>"$summary"
stage build 400 ninja -C "$build" -j "$jobs" -k 0 dedloc tst_tokenizer tst_trainerdevices bench_train_step
grep -m 20 -B2 -A8 "error:" "$out/build.log" >>"$summary"

export QT_QPA_PLATFORM=offscreen
for t in tst_tokenizer tst_trainerdevices; do
  [ -x "$build/tests/$t" ] && stage "$t" 300 "$build/tests/$t"
  grep -h "PASS\|FAIL\|SKIP\|QINFO\|Totals" "$out/$t.log" 2>/dev/null | cut -c1-200 >>"$summary"
done

if [ -x "$build/tests/tst_tokenizer" ] && ! grep -q "^Totals: [0-9]* passed, 0 failed" "$out/tst_tokenizer.log"; then
  # Where SentencePiece fails beside this libtorch: how the shim was loaded, what libtorch exports.
  LD_DEBUG=files "$build/tests/tst_tokenizer" 2>&1 | grep -E "sentencepiece|\[1\]|error|cannot" | head -40 >"$out/ld-debug.log"
  for lib in "$LIBTORCH"/../../lib/*.so*; do
    echo "$(basename "$lib"): $(nm -D --defined-only "$lib" 2>/dev/null | grep -c protobuf) protobuf symbols"
  done >"$out/torch-protobuf.log"
  shim=$build/lib/libdedloc_sentencepiece.so
  { echo "compiler: $(grep -m1 '^CMAKE_CXX_COMPILER:' "$build/CMakeCache.txt"); which -a g++ c++ | tr '\n' ' '"
    echo "shim needs: $(readelf -d "$shim" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
    echo "shim exports $(nm -D --defined-only "$shim" | wc -l) symbols (8 where libstdc++ is linked as a shared library)"
  } >>"$summary" 2>&1
  bench/staged-deps/shim-variants.sh "$build" >"$out/shim-variants.log" 2>&1
  cat "$out/shim-variants.log" >>"$summary"
  GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 "$build/tests/tst_tokenizer" >"$out/tst_tokenizer-tls.log" 2>&1
  { head -40 "$out/ld-debug.log"; cat "$out/torch-protobuf.log"; grep -h "Totals\|FATAL\|tokenizer" "$out/tst_tokenizer-tls.log" | head; } |
    cut -c1-240 >>"$summary"
  if [ -n "${FALLBACK_LIBDIR:-}" ]; then
    LD_LIBRARY_PATH=$FALLBACK_LIBDIR stage tst_tokenizer-fallback 120 "$build/tests/tst_tokenizer"
    if grep -q "^Totals: [0-9]* passed, 0 failed" "$out/tst_tokenizer-fallback.log"; then
      export LD_LIBRARY_PATH=$FALLBACK_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      note "the tokenizer passes with $FALLBACK_LIBDIR: the later stages use it"
      stage tst_trainerdevices-fallback 300 "$build/tests/tst_trainerdevices"
      grep -h "PASS\|FAIL\|SKIP\|QINFO\|QDEBUG\|Totals" "$out/tst_trainerdevices-fallback.log" | cut -c1-200 >>"$summary"
    else
      grep -h "Totals\|FATAL\|version\|error" "$out/tst_tokenizer-fallback.log" | head -5 >>"$summary"
    fi
  fi
fi

bench=$build/bench/bench_train_step
if [ -x "$bench" ]; then
  stage bench-gpu 300 "$bench" --seconds 5 --repeats 2 --presets tiny,default,large
  stage bench-gpu-large-batch 300 "$bench" --seconds 5 --repeats 2 --presets default,large --micro-batch 128 --target 1024
  stage bench-cpu 300 "$bench" --cpu --seconds 5 --repeats 1 --presets default,large
  cat "$out"/bench-*.log >>"$summary"
fi

app=$build/app/dedloc
if [ -x "$app" ]; then
  rm -rf /tmp/cuda-check-solo /tmp/cuda-check-swarm
  ( while sleep 5; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; done ) \
    >"$out/gpu-samples.log" 2>&1 &
  sampler=$!
  stage solo $((seconds + 60)) "$app" --headless --data-dir /tmp/cuda-check-solo \
    --metrics-out "$out/solo-metrics.jsonl" --duration "$seconds"
  stage swarm $((seconds + 90)) "$app" --local-swarm 2 --headless --data-dir /tmp/cuda-check-swarm \
    --metrics-dir "$out/swarm-metrics" --duration "$seconds"
  kill "$sampler" 2>/dev/null
  grep -h "on cuda\|training on\|parameters on" "$out/solo.log" "$out/swarm.log" | sort -u | head >>"$summary"
  tail -n 3 "$out/solo.log" "$out/swarm.log" >>"$summary"
  if [ -s "$out/solo-metrics.jsonl" ]; then
    note "solo: $(wc -l <"$out/solo-metrics.jsonl") steps; first and last:"
    sed -n '1p;$p' "$out/solo-metrics.jsonl" | cut -c1-400 >>"$summary"
  fi
fi
note "done"
