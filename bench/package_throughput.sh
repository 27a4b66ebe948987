#!/usr/bin/env bash
# package_throughput.sh - is the installed package as fast as the source build? Runs the README's
# main job headless (a monitor and 2 trainers on the bundled run, one torch thread each) for
# SECONDS with one `dedloc`, and prints the trainers' mean samples/s over the second half of
# their steps (the first half includes loading and the first validation).
#
#   bench/package_throughput.sh measure DEDLOC [SECONDS]   one program (the source build's
#                                                          build/app/dedloc, or /usr/bin/dedloc)
#   bench/package_throughput.sh build-deb [BUILD_DIR]      the DEB from a built BUILD_DIR (default
#                                                          build) into dist/, unsigned
#
# Prints "throughput <program> <samples/s per trainer> <steps measured>". On a fresh Debian 12,
# measure the source build after `./dedloc.sh build`, then install dist/*.deb on another fresh
# Debian 12 (apt-get install ./dedloc-desktop_*.deb) and measure /usr/bin/dedloc there
# (docs/BENCHMARKS.md "The installed package").
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

case "${1:-}" in
  build-deb)
    build_dir=${2:-build}
    installers/build-packages.sh --no-sign --no-build --build-dir "$build_dir" --out dist
    ;;
  measure)
    program=${2:?"give the dedloc program to measure"}
    seconds=${3:-150}
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # The bundled run: the packaged one for an installed program, the source tree's otherwise.
    manifest=resources/default-run/manifest.json
    [ -f /usr/share/dedloc/default-run/manifest.json ] && [ "${program#/usr/}" != "$program" ] &&
      manifest=/usr/share/dedloc/default-run/manifest.json
    port=$((32000 + RANDOM % 2000))
    "$program" --local-swarm 2 --headless --manifest "$manifest" --threads 1 --duration "$seconds" \
      --data-dir "$work/data" --metrics-dir "$work/metrics" --dht-port "$port" --status-interval 0 \
      > "$work/out.log" 2>&1 || { tail -20 "$work/out.log"; exit 1; }
    python3 - "$program" "$work/metrics" <<'EOF'
import json, pathlib, sys
program, metrics = sys.argv[1], pathlib.Path(sys.argv[2])
rates, steps = [], 0
for name in ("trainer-1.jsonl", "trainer-2.jsonl"):
    rows = [json.loads(l) for l in (metrics / name).read_text().splitlines() if l.strip()]
    rows = [r for r in rows if r.get("event") == "step" and r.get("samples_per_s", 0) > 0]
    half = rows[len(rows) // 2:]
    if not half:
        sys.exit(f"{name}: no steps to measure")
    rates.append(sum(r["samples_per_s"] for r in half) / len(half))
    steps += len(half)
print(f"throughput {program} {sum(rates) / len(rates):.2f} {steps}")
EOF
    ;;
  *)
    sed -n '2,15p' "$0"
    exit 2
    ;;
esac
