#!/usr/bin/env bash
# Learning quality of the bundled run: a 2-trainer local swarm and a single peer train the same
# run at the same time (1 torch thread each), then the single peer goes on alone until it has
# taken as many steps as the swarm (same target batch, so the same number of samples). Every
# SNAP seconds the newest checkpoint of one swarm trainer and of the single peer is copied to
# OUT/snapshots/{swarm,solo}-<step>.ddlc. Validation loss over steps and time is in the metrics
# files (OUT/swarm-metrics/*.jsonl, OUT/solo.jsonl). `evaluate` then fine-tunes chosen snapshots
# with `dedloc-lead evaluate` (downstream accuracy; docs/BENCHMARKS.md, "Learning quality").
#
#   bench/learning_quality.sh train    [build dir] [out dir] [swarm seconds] [snapshot seconds]
#   bench/learning_quality.sh evaluate [build dir] [out dir] swarm-160[:--no-control] solo-80 ...
#   bench/learning_quality.sh summary  [build dir] [out dir] [svg file]
set -euo pipefail
MODE=${1:?train, evaluate or summary}
BUILD=${2:-build}
OUT=${3:-bench-out/learning-quality}
APP="$BUILD/app/dedloc"
LEAD="$BUILD/app/dedloc-lead"

step_of() { # checkpoint file -> its meta.step
  python3 - "$1" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    assert f.read(8) == b"DDLCKPT1"
    n = struct.unpack("<Q", f.read(8))[0]
    print(json.loads(f.read(n))["meta"]["step"])
PY
}

snapshot() { # label file
  local file=$2 step
  [ -f "$file" ] || return 0
  step=$(step_of "$file" 2>/dev/null) || return 0
  [ -f "$OUT/snapshots/$1-$step.ddlc" ] || cp "$file" "$OUT/snapshots/$1-$step.ddlc.part" &&
    mv -f "$OUT/snapshots/$1-$step.ddlc.part" "$OUT/snapshots/$1-$step.ddlc" 2>/dev/null || true
}

snapshot_loop() { # every SNAP seconds until the file $OUT/.stop-snapshots exists
  while [ ! -f "$OUT/.stop-snapshots" ]; do
    snapshot swarm "$(ls "$OUT"/swarm/local-swarm/trainer*1/runs/*/checkpoint.ddlc 2>/dev/null | head -1)"
    snapshot solo "$(ls "$OUT"/solo/runs/*/solo/checkpoint.ddlc 2>/dev/null | head -1)"
    sleep "$SNAP"
  done
}

samples_as_steps() { # trainer metrics file -> ceil(samples of its model's global batches / target batch)
  python3 - "$1" <<'PY'
import json, math, sys
batch = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "step":
        batch[e["step"]] = e.get("batch_samples", e.get("samples", 0))
print(math.ceil(sum(batch.values()) / 128))
PY
}

if [ "$MODE" = train ]; then
  SWARM_SECONDS=${4:-3900}
  SNAP=${5:-300}
  mkdir -p "$OUT/snapshots"
  rm -f "$OUT/.stop-snapshots"
  snapshot_loop &
  snapper=$!
  date +%s > "$OUT/started"
  "$APP" --solo --headless --threads 1 --fresh --data-dir "$OUT/solo" --metrics-out "$OUT/solo.jsonl" \
    --status-interval 60 > "$OUT/solo.log" 2>&1 &
  solo=$!
  "$APP" --local-swarm 2 --headless --threads 1 --fresh --data-dir "$OUT/swarm" --metrics-dir "$OUT/swarm-metrics" \
    --dht-port 31395 --duration "$SWARM_SECONDS" --status-interval 60 > "$OUT/swarm.log" 2>&1 || true
  date +%s > "$OUT/swarm-ended"
  target=$(samples_as_steps "$(ls "$OUT"/swarm-metrics/trainer*1.jsonl | head -1)")
  echo "the swarm's model saw about $target target batches; the single peer goes on to that step"
  kill -TERM "$solo" 2>/dev/null || true
  wait "$solo" || true
  "$APP" --solo --headless --threads 1 --data-dir "$OUT/solo" --metrics-out "$OUT/solo.jsonl" \
    --steps "$target" --status-interval 60 >> "$OUT/solo.log" 2>&1 || true
  date +%s > "$OUT/solo-ended"
  sleep "$SNAP"
  touch "$OUT/.stop-snapshots"
  wait "$snapper" || true
  exit 0
fi
if [ "$MODE" = evaluate ]; then # evaluate [build] [out] name[:flags]...: one fine-tuning after the other
  shift 3
  mkdir -p "$OUT/eval"
  for spec in "$@"; do
    name=${spec%%:*}; flags=""; [ "$name" != "$spec" ] && flags=${spec#*:}
    [ -f "$OUT/eval/$name.json" ] && continue
    # shellcheck disable=SC2086
    "$LEAD" evaluate --checkpoint "$OUT/snapshots/$name.ddlc" --threads 1 --json "$OUT/eval/$name.json" $flags \
      > "$OUT/eval/$name.log" 2>&1
  done
  exit 0
fi
if [ "$MODE" = summary ]; then # summary [build] [out] [svg file]
  exec python3 "$(dirname "$0")/learning_quality_summary.py" "$OUT" "${4:-$OUT/learning-quality.svg}"
fi
echo "unknown mode $MODE" >&2
exit 2
