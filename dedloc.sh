#!/usr/bin/env bash
# dedloc.sh - the two set-up commands of the README, for a fresh Debian 12 machine.
#
#   ./dedloc.sh run [dedloc options...]   install what is missing, build, run the main job: a
#                                         local swarm (a monitor and 2 trainer processes) training
#                                         the bundled Bengali run; the window when a display
#                                         exists, status lines otherwise
#   ./dedloc.sh join [dedloc options...]  add a trainer to a running swarm (default: the local
#                                         swarm's bootstrap node 127.0.0.1:31340)
#   ./dedloc.sh test                      install what is missing, build, run every test
#   ./dedloc.sh build                     install what is missing, build only
#   ./dedloc.sh build-apps                the same, only the programs (no tests, no benchmarks)
#
# Environment: BUILD_DIR (default ./build), BUILD_TYPE (default Release), JOBS (ninja -j; ctest -j,
# default the number of CPUs: unit suites run side by side, the others alone),
# DEDLOC_GUI (default ON; OFF builds everything but the window: servers, CI).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-Release}
DEDLOC_GUI=${DEDLOC_GUI:-ON}

# build [target...]: everything by default; `run` and `join` build only the apps (a first start
# then skips compiling the tests and benchmarks).
build() {
  installers/install-deps.sh
  # Configure once; again when DEDLOC_GUI asks for another configuration than the build dir has.
  local cached
  cached=$(sed -n 's/^DEDLOC_GUI:BOOL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
  if [ ! -f "$BUILD_DIR/build.ninja" ] || [ "${cached^^}" != "${DEDLOC_GUI^^}" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DDEDLOC_GUI="$DEDLOC_GUI"
  fi
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$BUILD_DIR" ${JOBS:+-j "$JOBS"} "${targets[@]}"
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

cmd=${1:-run}
[ $# -gt 0 ] && shift
case "$cmd" in
  build)
    build
    ;;
  build-apps)
    build dedloc dedloc-lead dedloc-lead-serve dedloc-lead-model
    ;;
  test)
    build
    # Window tests (later) render offscreen; every suite runs on CPU without a GPU or network.
    QT_QPA_PLATFORM=offscreen ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
    ;;
  run)
    build dedloc dedloc-lead dedloc-lead-serve dedloc-lead-model
    exec "$BUILD_DIR/app/dedloc" --local-swarm 2 "$@"
    ;;
  join)
    build dedloc
    case " $* " in
      *" --bootstrap "* | *" --bootstrap="*) exec "$BUILD_DIR/app/dedloc" --join "$@" ;;
      *) exec "$BUILD_DIR/app/dedloc" --join --bootstrap 127.0.0.1:31340 "$@" ;;
    esac
    ;;
  help | -h | --help)
    usage
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
