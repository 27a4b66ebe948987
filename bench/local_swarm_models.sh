#!/usr/bin/env bash
# How many models a local swarm holds after each step: `dedloc --local-swarm N --hash-parameters`
# (a monitor and N trainers, each its own process, the bundled run) plus J trainers that join on
# the local swarm's DHT port (127.0.0.1:31340) a little later, for S seconds. Then
# bench/local_swarm_models.py prints, per global step, how many trainers took it, how many distinct
# params_sha they hold, and the (group size, groups merged) of their steps.
#
#   bench/local_swarm_models.sh [--dir DIR] [--trainers N] [--joiners J] [--seconds S] [--build DIR]
#
# Defaults: /tmp/dedloc-models, 16 trainers, 2 joiners, 240 s, build/. A benchmark: minutes of
# every core; not part of ctest.
set -euo pipefail
dir=/tmp/dedloc-models trainers=16 joiners=2 seconds=240 build=build
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift 2 ;;
        --trainers) trainers=$2; shift 2 ;;
        --joiners) joiners=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
done
app=$build/app/dedloc
[ -x "$app" ] || { echo "no $app: build first (./dedloc.sh build)" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir/metrics"
"$app" --headless --local-swarm "$trainers" --hash-parameters --duration "$seconds" \
    --metrics-dir "$dir/metrics" --data-dir "$dir/local" > "$dir/local.log" 2>&1 &
pids=($!)
sleep 25 # the local swarm's monitor is up and its trainers are training
for j in $(seq 1 "$joiners"); do
    "$app" --headless --bootstrap 127.0.0.1:31340 --hash-parameters --duration $((seconds - 30)) \
        --metrics-out "$dir/metrics/joiner$j.jsonl" --data-dir "$dir/joiner$j" > "$dir/joiner$j.log" 2>&1 &
    pids+=($!)
done
wait "${pids[@]}" || true
python3 "$(dirname "$0")/local_swarm_models.py" "$dir/metrics"
