#!/usr/bin/env bash
# dedloc's option checks (app/dedloc/CommandLine.cpp): every bad option is refused before the run
# starts, with exit code 2, one line "dedloc: ... (see --help)" on stderr and nothing on stdout;
# nothing is written to the data directory (no identity key, no pinned lead key) and no model loads.
# --help and --version exit 0.
set -euo pipefail
dedloc=$1
tmp=$(mktemp -d)
trap 'wait; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# No window (wantsWindow() would open one with a display), the bundled run, a fresh data directory.
unset DISPLAY WAYLAND_DISPLAY QT_QPA_PLATFORM DEDLOC_RUN_DIR XDG_DATA_HOME
export DEDLOC_DATA_DIR=$tmp/data

# run ARGS...: sets rc, out (stdout) and err (stderr); a run that starts would train on past the
# timeout (exit 124). Each run has its own files: refusals run side by side (below).
run() {
  rc=0
  files=$(mktemp -d -p "$tmp")
  timeout 20 "$dedloc" "$@" >"$files/out" 2>"$files/err" || rc=$?
  out=$(cat "$files/out") err=$(cat "$files/err")
}
# refused TEXT ARGS...: exit 2, stdout empty, stderr one line with TEXT, and the data directory
# still empty. Two run at once (each is mostly libtorch's start-up, a second of one core); a
# failure is reported at once and counted in $tmp/failed, which the end checks.
refusedNow() {
  local text=$1; shift
  run "$@"
  [ "$rc" = 2 ] || fail "dedloc $* exited $rc, expected 2: $err"
  [ -z "$out" ] || fail "dedloc $* printed on stdout: $out"
  [ "$(wc -l <"$files/err")" = 1 ] || fail "dedloc $* said more than one line (did it start?): $err"
  [[ $err == "dedloc: "*" (see --help)" ]] || fail "dedloc $* did not refuse in the usual form: $err"
  grep -qF -- "$text" <<<"$err" || fail "dedloc $* did not say '$text': $err"
  [ -z "$(ls -A "$DEDLOC_DATA_DIR" 2>/dev/null)" ] || fail "dedloc $* wrote into the data directory: $(ls -A "$DEDLOC_DATA_DIR")"
}
refused() {
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  (refusedNow "$@") || echo "$*" >>"$tmp/failed" &
}

run --help
[ "$rc" = 0 ] || fail "--help exited $rc: $err"
grep -qF "Usage: " <<<"$out" || fail "--help printed no usage: $out"
grep -qF -- "--min-peers <n>" <<<"$out" || fail "--help does not list --min-peers: $out"
# Its default is loopback: the help must say so, and what to give for other machines.
grep -A6 -- "--host <address>" <<<"$out" | tr -s ' \n' ' ' | grep -qF "default: 127.0.0.1" \
  || fail "--help does not give --host's default: $out"
grep -A6 -- "--host <address>" <<<"$out" | tr -s ' \n' ' ' | grep -qF "LAN address" \
  || fail "--help does not say --host needs the LAN address for other machines: $out"
run --version
[ "$rc" = 0 ] || fail "--version exited $rc: $err"
grep -qE '^dedloc [0-9]' <<<"$out" || fail "--version printed no version: $out"

refused "Unknown option 'no-such-option'" --headless --no-such-option
refused "Missing value after '--min-peers'" --headless --min-peers
export DEDLOC_RUN_DIR=$tmp/no-run # a run directory without a manifest: no fallback to the bundled run
refused "no run manifest given and the bundled default run was not found" --headless
unset DEDLOC_RUN_DIR

refused "--threads, --duration and --steps take non-negative numbers" --headless --duration soon
refused "--threads, --duration and --steps take non-negative numbers" --headless --duration -5
refused "--threads, --duration and --steps take non-negative numbers" --headless --duration nan
refused "--threads, --duration and --steps take non-negative numbers (--threads at most 1024)" --headless --threads 100000
refused "--dht-port 0 with --local-swarm" --headless --local-swarm 2 --dht-port 0
for b in bad :31340 127.0.0.1 127.0.0.1:0 127.0.0.1:99999 127.0.0.1:port; do
  refused "--bootstrap $b is not HOST:PORT" --headless --bootstrap "$b"
done
refused "--threads, --duration and --steps take non-negative numbers" --headless --steps many
refused "--role must be trainer, auxiliary or monitor" --headless --role boss
for g in x 0,,1 -1 64 "0;1"; do
  refused "--gpus takes GPU indices separated by commas (0,2) or none" --headless --gpus "$g"
done
refused "--token: no such file: $tmp/missing.token" --headless --token "$tmp/missing.token"
refused "--token is for one peer" --headless --local-swarm 2 --token "$tmp/missing.token"
refused "--local-swarm takes a number of trainers from 1 to 16" --headless --local-swarm 17
refused "--dht-port takes a port number" --headless --dht-port 70000
refused "--port takes a TCP port number from 1 to 65534" --headless --port 65535
refused "--port has no use in client mode" --headless --port 40000 --client-mode
refused "--port is for one peer" --headless --port 40000 --local-swarm 2
refused "only trainers can run in client mode" --headless --client-mode --role monitor
refused "--reduce is for a monitor" --headless --reduce

# --announce: HOST alone needs fixed ports, which the router forwards.
refused "--announce 203.0.113.7 needs fixed ports for the router to forward: give --port PORT" \
  --headless --announce 203.0.113.7
refused "give the address others reach this machine at" --headless --announce 0.0.0.0:40000
refused "the port must be a number from 1 to 65534" --headless --announce 203.0.113.7:65535
refused "--announce and --client-mode exclude each other" --headless --announce 203.0.113.7:40000 --client-mode
refused "--announce is for one peer" --headless --announce 203.0.113.7:40000 --local-swarm 2

# Numbers of the swarm options: --min-peers a whole number of at least 1, --bandwidth above 0.
swarmBad="a swarm option has a bad value"
refused "$swarmBad: numbers are wanted, with --min-peers a whole number of at least 1" --headless --min-peers -2
refused "$swarmBad: numbers are wanted, with --min-peers a whole number of at least 1" --headless --min-peers 2.7
refused "$swarmBad: numbers are wanted, with --min-peers a whole number of at least 1" --headless --min-peers 0
refused "$swarmBad: numbers are wanted" --headless --bandwidth fast
refused "$swarmBad: numbers are wanted" --headless --bandwidth inf
refused "$swarmBad: numbers are wanted" --headless --matchmaking-time inf
refused "--bandwidth, --progress-period, --matchmaking-time and --sender-timeout above 0" --headless --bandwidth -5
refused "--bandwidth, --progress-period, --matchmaking-time and --sender-timeout above 0" --headless --bandwidth 0
refused "$swarmBad: numbers are wanted" --headless --matchmaking-time 0
refused "--reducer-timeout at least --sender-timeout" --headless --sender-timeout 20 --reducer-timeout 10
maxBad="--max-progress-period takes 0 (10 x --progress-period) or seconds from --progress-period to 60"
refused "$maxBad" --headless --max-progress-period 0.5
refused "$maxBad" --headless --progress-period 2 --max-progress-period 1.5
refused "$maxBad" --headless --max-progress-period 1e9
refused "$maxBad" --headless --max-progress-period -1
refused "--lead-key: no such file: $tmp/missing.pub" --headless --lead-key "$tmp/missing.pub"

# --host: an address this machine does not have is refused before the model loads (the DHT
# node's bind would fail only after it). A documentation address that is not one of this machine's.
addresses=$( (ip -4 -o addr show 2>/dev/null || hostname -I 2>/dev/null || true) | tr -s ' /' '\n')
for foreign in 192.0.2.77 198.51.100.77 203.0.113.77; do
  grep -qxF "$foreign" <<<"$addresses" || break
done
refused "--host $foreign is not an address of this machine; this machine has 127.0.0.1" --headless --host "$foreign"
# An address it has passes that check (the refusal that follows is another option's).
refused "$swarmBad" --headless --host 127.0.0.1 --min-peers 0
refused "$swarmBad" --headless --host 0.0.0.0 --client-mode --min-peers 0
# 0.0.0.0 is nobody's address: a reachable peer, which advertises what it binds, cannot bind it
# (the peer would refuse it too, after the model loads). Client mode or --announce may.
refused "--host 0.0.0.0 cannot be advertised to other peers" --headless --host 0.0.0.0
refused "--host 0.0.0.0 cannot be advertised to other peers" --headless --host 0.0.0.0 --role monitor
# A local swarm's monitor gets its --host and is never in client mode.
refused "--host 0.0.0.0 cannot be advertised to other peers" --headless --host 0.0.0.0 --client-mode --local-swarm 2
# A peer bound to loopback (the default --host) cannot join a bootstrap node on another machine;
# a bootstrap node on this machine passes that check (the refusal that follows is another's).
refused "--bootstrap 203.0.113.5:31340 is another machine, but this peer listens on 127.0.0.1 (--host)" \
  --headless --bootstrap 203.0.113.5:31340
refused "--bootstrap swarm.example.org:31340 is another machine" --headless --bootstrap swarm.example.org:31340 --host 127.0.0.1
refused "$swarmBad" --headless --bootstrap 127.0.0.1:31340 --min-peers 0
refused "$swarmBad" --headless --bootstrap localhost:31340 --min-peers 0
refused "$swarmBad" --headless --host 0.0.0.0 --announce 203.0.113.7:40000 --min-peers 0

# A lead key named with --lead-key that is not the key this data directory pinned for the run:
# refused (exit 2, naming both keys), not silently replaced by the pinned one.
source=$(cd "$(dirname "$0")/.." && pwd)
runId=$(grep -o '"run_id": *"[^"]*"' "$source/resources/default-run/manifest.json" | sed 's/.*"\([^"]*\)"$/\1/')
mkdir -p "$tmp/pinned/trust"
cp "$source/resources/default-run/lead.pub" "$tmp/pinned/trust/$runId.pub"
rc=0
DEDLOC_DATA_DIR=$tmp/pinned timeout 20 "$dedloc" --headless --lead-key "$source/bench/fuzz/corpus/MinisignKey/lead.pub" \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "a --lead-key other than the pinned one exited $rc, expected 2: $(cat "$tmp/err")"
grep -qF "is not the key pinned for this run" "$tmp/err" || fail "a --lead-key other than the pinned one: $(cat "$tmp/err")"

wait
[ ! -s "$tmp/failed" ] || fail "$(wc -l <"$tmp/failed") refusal(s) went wrong (above)"
echo "PASS: dedloc --help/--version, and its refusals of bad options before anything starts"
