#!/usr/bin/env bash
# Builds the release packages (CPack DEB + TGZ) from a configured build directory, writes
# SHA256SUMS and signs it with the lead key (minisign format, via dedloc-lead sign).
#
#   installers/build-packages.sh --secret ~/offline/lead.key [--password-env VAR | --password-stdin]
#                                [--build-dir build] [--out dist] [--no-build]
#
# The lead key's secret never has to touch the build machine's disk for long: sign on the offline
# machine instead with --no-sign, carry SHA256SUMS over, and run
#   dedloc-lead sign SHA256SUMS --secret lead.key --trusted-comment "dedloc-desktop <version> packages"
# (docs/LEAD_GUIDE.md, "Offline key handling"). People who download check with
# installers/verify-download.sh.
set -euo pipefail

build_dir=build
out_dir=dist
secret=
password_args=()
do_build=1
do_sign=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --out) out_dir=$2; shift 2 ;;
    --secret) secret=$2; shift 2 ;;
    --password-env) password_args=(--password-env "$2"); shift 2 ;;
    --password-stdin) password_args=(--password-stdin); shift ;;
    --no-build) do_build=0; shift ;;
    --no-sign) do_sign=0; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "build-packages: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ ! -f "$build_dir/CPackConfig.cmake" ]; then
  echo "build-packages: $build_dir is not a configured build directory (no CPackConfig.cmake);" \
       "run cmake -S . -B $build_dir -G Ninja first" >&2
  exit 2
fi
if [ "$do_sign" = 1 ] && [ -z "$secret" ]; then
  echo "build-packages: give --secret LEAD_KEY (or --no-sign to sign SHA256SUMS elsewhere)" >&2
  exit 2
fi
if [ "$do_sign" = 1 ] && [ ! -f "$secret" ]; then
  echo "build-packages: secret key $secret does not exist" >&2
  exit 2
fi

if [ "$do_build" = 1 ]; then
  cmake --build "$build_dir" --target dedloc dedloc-lead dedloc_sentencepiece
fi
lead="$build_dir/app/dedloc-lead"
# The run we ship must be signed and intact before it goes into a package.
"$lead" verify-run resources/default-run/manifest.json
"$lead" verify resources/default-run/manifest.json --public resources/default-run/lead.pub

mkdir -p "$out_dir"
out_abs=$(cd "$out_dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpack --config "$build_dir/CPackConfig.cmake" -G "DEB;TGZ" -B "$work"
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build_dir/CPackConfig.cmake")
shopt -s nullglob
packages=("$work"/*.deb "$work"/*.tar.gz)
if [ ${#packages[@]} -eq 0 ]; then
  echo "build-packages: cpack produced no package" >&2
  exit 1
fi
cp "${packages[@]}" "$out_abs/"
cd "$out_abs"
names=()
for p in "${packages[@]}"; do names+=("$(basename "$p")"); done
sha256sum "${names[@]}" > SHA256SUMS
if [ "$do_sign" = 1 ]; then
  "$OLDPWD/$lead" sign SHA256SUMS --secret "$secret" "${password_args[@]}" \
    --trusted-comment "dedloc-desktop ${version:-?} packages: ${names[*]}"
fi
echo "build-packages: wrote to $out_abs:"
ls -l "$out_abs"
