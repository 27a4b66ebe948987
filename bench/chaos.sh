#!/usr/bin/env bash
# Chaos soak of an open run: a monitor and 4 trainers (1 torch thread each) train a tiny-model run
# on loopback, one of the trainers being tests/hostile's dedloc-hostile-peer (it sends its gradient
# times a factor). Every --kill-every seconds a random trainer, honest or hostile, gets SIGKILL and
# is started again at once with the same data dir and without --fresh, as a volunteer's machine
# that restarts. RSS of every peer process is sampled every 10 s. At the end every peer gets
# SIGTERM (SIGKILL after 20 s) and bench/chaos_report.py prints, from the peers' metrics files,
# their logs and the monitor's swarm.jsonl: steps, averaged fraction, non-finite losses, the
# longest stall, RSS (and, not judged, the metrics' heap in use) per process lifetime and across
# restarts, the last validation loss, rejoin times after restarts and who banned whom. Exit
# status 0 only when every PASS/FAIL judgment passes.
#
#   bench/chaos.sh [--dir DIR] [--minutes M] [--kill-every S] [--hostile KIND|none] [--build DIR]
#                  [--target-batch N] [--warmup S] [--seed N] [--kill-only NAME] [--peer-args "ARGS"]
#
#   --dir DIR          scratch dir (default /tmp/dedloc-chaos): DIR/run holds the signed tiny run
#                      (made once, reused later); each soak writes DIR/soak-<date>-<kind>/
#   --minutes M        length of the soak (default 30)
#   --kill-every S     seconds between kills (default 30; 0: never)
#   --hostile KIND     the hostile trainer's --attack (default scale:-1000); none: 4 honest ones
#   --build DIR        build tree with app/dedloc and tests/dedloc-hostile-peer (default: build/)
#   --target-batch N   samples per global step of a new run (default 64)
#   --warmup S         RSS growth counts from S seconds after a process started (default 120: a
#                      trainer's RSS climbs for its first 1-2 minutes, then levels). A process
#                      with 10 minutes of samples after that is judged by a least-squares line
#                      through them; shorter lives (kills) by their RSS in their first minute
#                      after that, early in the soak against late, at equal work (the steps each
#                      had made by each sample: bench/chaos_report.py)
#   --seed N           seed of the kill order (default: the time)
#   --kill-only NAME   kill and restart only this trainer (e.g. trainer-1), every --kill-every s:
#                      lifetimes of equal length, many of them, beside peers that live the whole
#                      soak (whether memory grows across restarts; the others' long-run lines)
#   --peer-args ARGS   more dedloc options for every peer, e.g. "--matchmaking-time 4"
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
DIR=/tmp/dedloc-chaos
MINUTES=30
KILL_EVERY=30
HOSTILE=scale:-1000
BUILD=$HERE/../build
TARGET_BATCH=64
WARMUP=120
SEED=$(date +%s)
PEER_ARGS=""
KILL_ONLY=""

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

parse_options() {
  while [ $# -gt 0 ]; do
    case $1 in -h | --help) usage; exit 0 ;; esac
    [ $# -ge 2 ] || { echo "chaos.sh: $1: unknown option or no value (see --help)" >&2; exit 2; }
    case $1 in
      --dir) DIR=$2 ;;
      --minutes) MINUTES=$2 ;;
      --kill-every) KILL_EVERY=$2 ;;
      --hostile) HOSTILE=$2 ;;
      --build) BUILD=$2 ;;
      --target-batch) TARGET_BATCH=$2 ;;
      --warmup) WARMUP=$2 ;;
      --seed) SEED=$2 ;;
      --peer-args) PEER_ARGS=$2 ;;
      --kill-only) KILL_ONLY=$2 ;;
      *) echo "chaos.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift 2
  done
}

# --- The run: a tiny model on a slice of the bundled corpus, signed with a throw-away key.

make_run() { # once: DIR/run
  local run=$DIR/run lead=$BUILD/app/dedloc-lead
  [ -f "$run/manifest.json.minisig" ] && { echo "reusing the run in $run"; return 0; }
  rm -rf "$run" "$DIR/keys"
  mkdir -p "$run"
  head -n 3000 "$HERE/../resources/default-run/corpus/bn_pd_literature.txt" > "$DIR/corpus.txt"
  cp "$HERE/../resources/default-run/tokenizer.model" "$run/"
  "$lead" make-run --corpus "$DIR/corpus.txt" --out "$run" --run-id chaos-tiny --name "chaos soak (tiny)" \
    --lead "bench/chaos.sh" --preset tiny --vocab-size 8000 --sequence-length 64 --micro-batch-size 16 \
    --target-batch-size "$TARGET_BATCH" --keep-tokenizer
  "$lead" keygen --out "$DIR/keys" --no-password > /dev/null
  "$lead" sign "$run/manifest.json" --secret "$DIR/keys/lead.key" --trusted-comment "chaos soak run"
  cp "$DIR/keys/lead.pub" "$run/lead.pub"
}

free_udp_port() {
  python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- Peers. PID[name] is the live process of each peer, STARTED[name] when it started.

declare -A PID STARTED
TRAINERS=()

start_peer() { # name, extra options...: start it in its own session (no terminal signals)
  local name=$1; shift
  local data=$SOAK/peers/$name program=("$BUILD/app/dedloc")
  [ "$name" = hostile ] && program=("$BUILD/tests/dedloc-hostile-peer" --attack "$HOSTILE")
  mkdir -p "$data"
  # shellcheck disable=SC2086
  setsid "${program[@]}" --headless --manifest "$DIR/run/manifest.json" --lead-key "$DIR/run/lead.pub" \
    --threads 1 --progress-period 1 --status-interval 30 --hash-parameters --name "$name" --data-dir "$data" \
    --metrics-out "$SOAK/$name.jsonl" "$@" $PEER_ARGS >> "$SOAK/$name.log" 2>&1 < /dev/null &
  PID[$name]=$!
  STARTED[$name]=$(date +%s)
  printf '%s\tstart\t%s\t%s\n' "$(date +%s.%N)" "$name" "${PID[$name]}" >> "$SOAK/events.tsv"
}

start_trainer() { # name, extra options...
  local name=$1; shift
  start_peer "$name" --bootstrap "127.0.0.1:$DHT_PORT" "$@"
}

alive() { # pid: running and not a zombie
  [ -r "/proc/$1/stat" ] && ! grep -q ') Z ' "/proc/$1/stat" 2>/dev/null
}

kill_random_trainer() {
  local name=${KILL_ONLY:-${TRAINERS[RANDOM % ${#TRAINERS[@]}]}} pid
  pid=${PID[$name]}
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  printf '%s\tkill\t%s\t%s\n' "$(date +%s.%N)" "$name" "$pid" >> "$SOAK/events.tsv"
  echo "$(date -u +%H:%M:%S) killed $name (pid $pid) and restarted it"
  start_trainer "$name"
}

restart_dead_peers() { # a peer that exited by itself is logged (exit status) and started again
  local name pid status
  for name in "${!PID[@]}"; do
    pid=${PID[$name]}
    alive "$pid" && continue
    status=0
    wait "$pid" 2>/dev/null || status=$?
    printf '%s\texit\t%s\t%s\t%s\n' "$(date +%s.%N)" "$name" "$pid" "$status" >> "$SOAK/events.tsv"
    echo "$(date -u +%H:%M:%S) $name (pid $pid) exited by itself with status $status; starting it again"
    if [ "$name" = monitor ]; then
      start_peer monitor --role monitor --dht-port "$DHT_PORT" --swarm-metrics-out "$SOAK/swarm.jsonl"
    else
      start_trainer "$name"
    fi
  done
}

sample_rss() { # one line per live peer: time, name, pid, seconds since its start, VmRSS in KiB
  local name pid rss now
  now=$(date +%s)
  for name in "${!PID[@]}"; do
    pid=${PID[$name]}
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || continue
    [ -n "$rss" ] || continue
    printf '%s\t%s\t%s\t%s\t%s\n' "$now" "$name" "$pid" "$((now - STARTED[$name]))" "$rss" >> "$SOAK/rss.tsv"
  done
}

stop_all() { # SIGTERM to every peer, SIGKILL to those still there after 20 s
  local name pid waited=0
  for pid in "${PID[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for name in "${!PID[@]}"; do
    pid=${PID[$name]}
    while alive "$pid" && [ $waited -lt 20 ]; do sleep 1; waited=$((waited + 1)); done
    if alive "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      printf '%s\tsigkill-at-stop\t%s\t%s\n' "$(date +%s.%N)" "$name" "$pid" >> "$SOAK/events.tsv"
    fi
    wait "$pid" 2>/dev/null || true
  done
  PID=()
}

main() {
  parse_options "$@"
  [ -x "$BUILD/app/dedloc" ] || { echo "chaos.sh: no $BUILD/app/dedloc (build it first)" >&2; exit 2; }
  if [ "$HOSTILE" != none ] && [ ! -x "$BUILD/tests/dedloc-hostile-peer" ]; then
    echo "chaos.sh: no $BUILD/tests/dedloc-hostile-peer (build the tests first)" >&2; exit 2
  fi
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  make_run
  SOAK=$DIR/soak-$(date -u +%Y%m%d-%H%M%S)-${HOSTILE//[^A-Za-z0-9.-]/_}
  mkdir -p "$SOAK"
  RANDOM=$SEED
  DHT_PORT=$(free_udp_port)
  TRAINERS=(trainer-1 trainer-2 trainer-3 trainer-4)
  [ "$HOSTILE" = none ] || TRAINERS[3]=hostile
  if [ -n "$KILL_ONLY" ] && [[ " ${TRAINERS[*]} " != *" $KILL_ONLY "* ]]; then
    echo "chaos.sh: --kill-only $KILL_ONLY: not one of ${TRAINERS[*]}" >&2; exit 2
  fi
  echo "soak of $MINUTES min, a kill every $KILL_EVERY s (${KILL_ONLY:-seed $SEED}), hostile: $HOSTILE; files in $SOAK"
  trap 'stop_all' EXIT
  trap 'exit 130' INT TERM

  local begin end next_kill next_rss now
  begin=$(date +%s)
  start_peer monitor --role monitor --dht-port "$DHT_PORT" --swarm-metrics-out "$SOAK/swarm.jsonl" --fresh
  sleep 1
  for name in "${TRAINERS[@]}"; do start_trainer "$name" --fresh; done
  end=$((begin + MINUTES * 60))
  next_kill=$((begin + KILL_EVERY))
  next_rss=$begin
  while now=$(date +%s) && [ "$now" -lt "$end" ]; do
    restart_dead_peers
    [ "$now" -ge "$next_rss" ] && { sample_rss; next_rss=$((next_rss + 10)); }
    if [ "$KILL_EVERY" -gt 0 ] && [ "$now" -ge "$next_kill" ]; then
      kill_random_trainer
      next_kill=$((next_kill + KILL_EVERY))
    fi
    sleep 1
  done
  sample_rss
  echo "$(date -u +%H:%M:%S) stopping every peer"
  stop_all
  trap - EXIT
  python3 "$HERE/chaos_report.py" "$SOAK" --begin "$begin" --end "$end" --warmup "$WARMUP" \
    --hostile "$HOSTILE" | tee "$SOAK/report.txt"
}

main "$@"
