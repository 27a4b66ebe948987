#!/usr/bin/env bash
# install-deps.sh - install every Debian 12 package that the build, the tests and the
# benchmarks of DeDLOC Desktop need. Idempotent: when everything is present it only checks
# (dpkg-query, well under a second) and exits 0. Needs root (or sudo) to install.
#
# Usage: installers/install-deps.sh [--check]
#   --check   only report what is missing; exit 1 if anything is.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # libtorch (CPU) and a fast BLAS for it: the reference BLAS that libtorch-dev pulls in is
  # 8-27x slower here (docs/DECISIONS.md).
  libtorch-dev libopenblas0-openmp
  # Qt 6: Core/Gui/Widgets/Test + Charts + Svg
  qt6-base-dev qt6-charts-dev qt6-svg-dev libgl-dev
  # Qt6Charts' CMake package needs Qt6OpenGL's (and Qt6Gui looks for xkbcommon); XCB: the window
  # asks the X server whether a program is full screen
  libqt6opengl6-dev libxkbcommon-dev libxcb1-dev
  # Qt Linguist: lrelease/lupdate (qt6-l10n-tools) and their CMake package Qt6LinguistTools
  # (qt6-tools-dev) compile the window's Bengali translation (resources/translations); a Bengali
  # font draws it (the .deb recommends one)
  qt6-l10n-tools qt6-tools-dev fonts-lohit-beng-bengali
  # networking, crypto, tokenizer, JSON; port mappings on the home router (UPnP-IGD, NAT-PMP)
  libzmq3-dev cppzmq-dev libopendht-dev libsodium-dev libminiupnpc-dev libnatpmp-dev
  libsentencepiece-dev sentencepiece nlohmann-json3-dev
  # HTTP status of `dedloc-lead serve` (docs/DECISIONS.md)
  libcpp-httplib-dev
  # gloo (the ring all-reduce the benchmarks compare against)
  libgloo-dev
  # tests: minisign interop, a virtual display for window tests, network namespaces and tc for
  # the swarm over emulated links (tst_swarmlinks, bench_allreduce --netns-mbit; root only),
  # nftables for the home routers' NAT of the emulated internet, and a UPnP-IGD / NAT-PMP daemon
  # for its routers (tst_portmapping). miniupnpd-nftables alone has no service to start and asks
  # nothing (the `miniupnpd` package, a recommendation, has the debconf questions and is skipped)
  minisign xvfb xauth iproute2 nftables miniupnpd-nftables
  # tests: a private session bus for the desktop notifications (tst_notifier), and a real desktop
  # on Xvfb for tst_realdesktop: a window manager with EWMH full screen, a system tray host, a
  # notification daemon, and mouse clicks
  dbus-daemon openbox trayer dunst xdotool
  # tests: a test function that outlives its watchdog (QTEST_FUNCTION_TIMEOUT) prints the stack of
  # every thread before it is ended: QtTest runs gdb for that when gdb is installed
  gdb
  # tests: a reference ALBERT in PyTorch checks the Hugging Face export (tst_huggingfaceexport)
  python3-torch
  # packaging: CPack's DEB generator runs `file` and dpkg-shlibdeps (dpkg-dev) on the binaries
  file dpkg-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${1:-}" = "--check" ]; then
  if [ ${#missing[@]} -eq 0 ]; then echo "install-deps: all ${#PACKAGES[@]} packages present"; exit 0; fi
  echo "install-deps: missing: ${missing[*]}"; exit 1
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# libtorch dlopens libblas.so.3 through the alternatives system: make sure OpenBLAS-openmp wins
# over the reference BLAS (which libtorch-dev also installs).
want=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
arch_dir=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
want=/usr/lib/$arch_dir/openblas-openmp/libblas.so.3
link=libblas.so.3-$arch_dir
if [ -e "$want" ] && [ "$(readlink -f /etc/alternatives/$link 2>/dev/null)" != "$want" ]; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO=sudo
  $SUDO update-alternatives --set "$link" "$want" >/dev/null
  echo "install-deps: BLAS set to OpenBLAS-openmp"
fi
wantl=/usr/lib/$arch_dir/openblas-openmp/liblapack.so.3
linkl=liblapack.so.3-$arch_dir
if [ -e "$wantl" ] && [ "$(readlink -f /etc/alternatives/$linkl 2>/dev/null)" != "$wantl" ]; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO=sudo
  $SUDO update-alternatives --set "$linkl" "$wantl" >/dev/null || true
fi
echo "install-deps: ok"
