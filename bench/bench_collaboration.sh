#!/usr/bin/env bash
# Collaboration efficiency (issue 3): the throughput of a 2-peer local swarm (1 torch thread per
# peer, plus the idle monitor) divided by twice the throughput of one peer training alone with 1
# torch thread, on the bundled default run. Goal: at least 0.9.
#
#   bench/bench_collaboration.sh [build dir] [seconds per measurement]
#
# Throughput = samples of the steps completed after the first one / their wall time (the first
# step includes start-up). Needs python3 for reading the metrics. Run on an idle machine.
set -euo pipefail
BUILD=${1:-build}
SECONDS_EACH=${2:-180}
APP="$BUILD/app/dedloc"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

rate() { # metrics files...: samples/s over steps 2.. of the union of (step -> batch samples, time)
  python3 - "$@" <<'PY'
import json, sys
steps = {}
for f in sys.argv[1:]:
    for line in open(f):
        e = json.loads(line)
        if e.get("event") != "step":
            continue
        s = e["step"]
        batch = e.get("batch_samples", e.get("samples"))
        steps.setdefault(s, (batch, e["time"]))
        steps[s] = (batch, max(steps[s][1], e["time"]))
keys = sorted(steps)
if len(keys) < 3:
    print("nan"); sys.exit()
first, last = keys[0], keys[-1]
samples = sum(steps[k][0] for k in keys[1:])
print(samples / (steps[last][1] - steps[first][1]))
PY
}

echo "single peer, 1 thread, ${SECONDS_EACH} s ..."
"$APP" --solo --headless --threads 1 --fresh --data-dir "$WORK/solo" --duration "$SECONDS_EACH" \
  --metrics-out "$WORK/solo.jsonl" > /dev/null 2>&1
single=$(rate "$WORK/solo.jsonl")

echo "2-peer local swarm, 1 thread each, ${SECONDS_EACH} s ..."
"$APP" --local-swarm 2 --headless --fresh --data-dir "$WORK/swarm" --dht-port 31390 --duration "$SECONDS_EACH" \
  --metrics-dir "$WORK/metrics" > "$WORK/swarm.log" 2>&1
swarm=$(rate "$WORK/metrics/trainer-1.jsonl" "$WORK/metrics/trainer-2.jsonl")
fallbacks=$(grep -c "fell back" "$WORK/swarm.log" || true)
steps=$(grep -c '"event":"step"' "$WORK/metrics/trainer-1.jsonl" || true)

python3 - "$single" "$swarm" "$fallbacks" "$steps" <<'PY'
import sys
single, swarm, fallbacks, steps = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
print(f"single peer:      {single:7.2f} samples/s")
print(f"2-peer swarm:     {swarm:7.2f} samples/s ({steps} steps on trainer-1, {fallbacks} local fallbacks)")
print(f"efficiency:       {swarm / (2 * single):7.3f}  (goal >= 0.9)")
PY
