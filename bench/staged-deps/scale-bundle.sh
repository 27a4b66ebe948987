#!/usr/bin/env bash
# scale-bundle.sh - pack bench_scale (the swarm simulator's benchmark: no libtorch, no Qt) with the
# Debian 12 libraries it loads into one folder, for a machine with many cores that is not Debian
# (a GPU host, say: bench_scale uses only its CPUs). There, run.sh in that folder runs the usual
# scale command at each N and writes the tables and each run's log under OUT.
#
# Usage (on the Debian machine, after a build): bench/staged-deps/scale-bundle.sh [BUILD_DIR] [DIR]
#   DIR defaults to .devscale (ignore it in .git/info/exclude; about 20 MB)
# There:  OUT=/some/dir [PEERS="64 128 256"] [PER_N=190] DIR/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
D=${2:-.devscale}
mkdir -p "$D/lib"
cp "$B/bench/bench_scale" "$D/"
# glibc and the C++ runtime stay the host's (newer ones load Debian 12's programs).
for l in $(ldd "$B/bench/bench_scale" | awk '/=>/{print $3}'); do
  case $(basename "$l") in
    libc.so*|libm.so*|libpthread.so*|libresolv.so*|libstdc++.so*|libgcc_s.so*|ld-linux*) ;;
    *) cp -L "$l" "$D/lib/" ;;
  esac
done
cat > "$D/run.sh" <<'RUN'
#!/usr/bin/env bash
# The scale command of docs/BENCHMARKS.md at each N in PEERS, one process per N.
set -uo pipefail
: "${OUT:?set OUT to the folder for the results}"
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
ulimit -n "$(ulimit -Hn)"
{ nproc; head -2 /etc/os-release; uptime; free -g | head -2; } > "$OUT/host.txt" 2>&1
for n in ${PEERS:-64 128 256}; do
  echo "=== N=$n start $(date +%T)" | tee -a "$OUT/scale.txt"
  timeout "${PER_N:-190}" ./bench_scale --peers "$n" --seconds 100 --group-size 16 --elements 100000 \
    --step-seconds 10 --churn 0.1 2> >(gzip > "$OUT/stderr-$n.log.gz") | tee -a "$OUT/scale.txt"
  echo "=== N=$n rc ${PIPESTATUS[0]} end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/scale.txt"
done
RUN
chmod +x "$D/run.sh"
du -sh "$D"
