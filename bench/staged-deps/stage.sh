#!/usr/bin/env bash
# stage.sh - pack the Debian 12 packages a headless build needs (headers, pkg-config and CMake
# files, and the shared libraries they load) into one tar.xz, for a GPU machine that is not
# Debian and cannot install packages (a cloud image with PyTorch and CUDA, say). There,
# check-on-gpu-host.sh unpacks it and runs bench/cuda_check.sh against that PyTorch libtorch.
# The headers are those the build in BUILD_DIR read (ninja deps); libtorch, glibc and libstdc++
# are left out (the GPU machine has its own).
#
# Usage (on the Debian machine, after a build): bench/staged-deps/stage.sh [BUILD_DIR] [OUT_TAR]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
out_tar=$(realpath -m "${2:-debian-deps.tar.xz}")

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; mkdir -p $work/debs $work/root
# 1. header packages actually used by the build
ninja -C $B -t deps | awk '/^ +\/usr\/include/{print $1}' | sort -u > $work/headers.txt
grep -v -E '^/usr/include/(c\+\+|torch|ATen|c10|caffe2|TH|THC|linux|asm|asm-generic|x86_64-linux-gnu/(bits|sys|gnu|asm))/' $work/headers.txt \
  | grep -v -E '^/usr/include/[^/]+\.h$' > $work/hdr2.txt || true
# top-level *.h: keep those not from libc6-dev
grep -E '^/usr/include/[^/]+\.h$' $work/headers.txt >> $work/hdr2.txt || true
xargs -a $work/hdr2.txt dpkg -S 2>/dev/null | cut -d: -f1 | tr ',' '\n' | sed 's/ //g' | sort -u > $work/hdrpkgs.txt
# 2. runtime closure of the GUI-free binaries (no torch, no glibc, no libstdc++/libgcc/libgomp)
L=/usr/lib/x86_64-linux-gnu
{ for l in libopendht.so libzmq.so libsodium.so libminiupnpc.so libnatpmp.so libcpp-httplib.so; do readlink -f $L/$l; ldd $(readlink -f $L/$l); done
  ldd $B/lib/libdedloc_sentencepiece.so; ldd /usr/lib/qt6/libexec/moc; ldd /usr/lib/qt6/libexec/rcc; ldd /usr/bin/pkgconf
  for l in libQt6Test.so.6 libQt6Network.so.6; do ldd /usr/lib/x86_64-linux-gnu/$l; done; } \
  | awk '/=>/{print $3} /^\//{print $1}' | sort -u | xargs -n1 readlink -f | sort -u > $work/libs.txt
for f in $(cat $work/libs.txt); do dpkg -S "$f" 2>/dev/null || dpkg -S "${f/\/usr\/lib/\/lib}" 2>/dev/null || echo "UNOWNED: $f" >&2; done \
  | cut -d: -f1 | sort -u > $work/libpkgs.txt
cat $work/hdrpkgs.txt $work/libpkgs.txt - <<'PK' | sort -u | grep -v -E '^(libc6|libc6-dev|libgcc-s1|libstdc\+\+6|libstdc\+\+-12-dev|libgomp1|linux-libc-dev|libtorch.*|libc10.*|libopenblas.*|libblas3|liblapack3|libcaffe2.*|libprotobuf.*|libgfortran5|libquadmath0|libonnx.*|libsleef3|libfoxi.*|libtensorpipe.*|libgloo.*|libcpuinfo0|libxnnpack0|libnnpack0|libpthreadpool0|libfmt-dev|libdnnl.*|libfbgemm.*|libasmjit0|libclog0|libnuma1|libgoogle-glog.*|libgflags.*|libunwind8|libmpi.*|libopenmpi.*|libhwloc.*|libevent.*|libibverbs1|librdmacm1|libpmix2|libfabric1|libpsm.*|libucx0|libnl.*|libltdl7|libxml2|liblzma5|libzstd-dev|libboost.*|libgoogle-glog-dev|libgflags-dev|qt6-charts-dev|libxcb1-dev)$' > $work/pkgs.txt
qt6-base-dev
qt6-base-dev-tools
libqt6core6
libqt6network6
libqt6test6
nlohmann-json3-dev
libsentencepiece-dev
libsodium-dev
libzmq3-dev
cppzmq-dev
libopendht-dev
libcpp-httplib-dev
libcpp-httplib0.11
libminiupnpc-dev
libnatpmp-dev
pkgconf
pkgconf-bin
libpkgconf3
zlib1g
libcom-err2
libkeyutils1
PK
echo "packages: $(wc -l < $work/pkgs.txt)"; tr '\n' ' ' < $work/pkgs.txt; echo
(cd $work/debs && apt-get download $(cat $work/pkgs.txt) >/dev/null)
for d in $work/debs/*.deb; do dpkg -x "$d" $work/root; done
r=$work/root
# Boost (msgpack's C++ API needs it): only the headers the build reads, and its config.
grep '^/usr/include/boost/' $work/headers.txt | while read -r h; do mkdir -p "$r$(dirname "$h")"; cp "$h" "$r$h"; done
cp -r /usr/include/boost/config $r/usr/include/boost/
rm -rf $r/usr/share/doc $r/usr/share/man $r/usr/share/locale $r/usr/share/lintian $r/usr/share/bug $r/etc
# Shared linking needs no private requirements: drop them (their -dev packages are not here).
find $r -name '*.pc' -exec sed -i '/^Requires.private/d' {} +
# Host tools: run with the staged libraries, found next to themselves.
wrap() { # wrap FILE RELATIVE_LIBDIR
  mv "$1" "$1.real"
  printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH="$d/%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/%s.real" "$@"\n' "$2" "$(basename "$1")" > "$1"
  chmod +x "$1"
}
for t in $r/usr/lib/qt6/libexec/* $r/usr/lib/qt6/bin/*; do
  [ -f "$t" ] && [ ! -L "$t" ] && file "$t" | grep -q ELF && wrap "$t" ../../x86_64-linux-gnu || true
done
wrap $r/usr/bin/pkgconf ../lib/x86_64-linux-gnu
# Debian's C++ runtime, apart: cuda_check.sh tries it (FALLBACK_LIBDIR) where a Debian-built
# library misbehaves with the host's newer libstdc++.
mkdir -p $r/usr/lib/debian-runtime
cp -L /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 $r/usr/lib/debian-runtime/
du -sh $r
tar -C $r -cf - . | xz -T0 -6 > "$out_tar"
ls -la "$out_tar"
