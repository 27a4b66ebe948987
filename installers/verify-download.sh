#!/usr/bin/env bash
# For people who downloaded DeDLOC Desktop: checks that SHA256SUMS is signed by the project
# lead's key and that every downloaded package matches it.
#
#   verify-download.sh --public lead.pub [DIR]        (lead.pub: the key published by the lead)
#   verify-download.sh -P RWQ...base64... [DIR]
#
# DIR (default .) holds SHA256SUMS, SHA256SUMS.minisig and the packages. Uses `minisign`
# (Debian package minisign) or, where installed, `dedloc-lead verify`. Exit 0 only when the
# signature is valid and every package listed and present matches; 1 when anything fails.
set -euo pipefail

pub=
pub_inline=
dir=.
while [ $# -gt 0 ]; do
  case "$1" in
    --public|-p) pub=$2; shift 2 ;;
    -P) pub_inline=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "verify-download: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
if [ -z "$pub" ] && [ -z "$pub_inline" ]; then
  echo "verify-download: give the lead's public key: --public FILE or -P BASE64" >&2
  exit 2
fi
cd "$dir"
for f in SHA256SUMS SHA256SUMS.minisig; do
  if [ ! -f "$f" ]; then echo "verify-download: $dir/$f is missing; download it beside the packages" >&2; exit 1; fi
done

if command -v minisign >/dev/null; then
  if [ -n "$pub" ]; then minisign -V -p "$pub" -m SHA256SUMS || { echo "verify-download: BAD SIGNATURE on SHA256SUMS" >&2; exit 1; }
  else minisign -V -P "$pub_inline" -m SHA256SUMS || { echo "verify-download: BAD SIGNATURE on SHA256SUMS" >&2; exit 1; }
  fi
elif command -v dedloc-lead >/dev/null; then
  dedloc-lead verify SHA256SUMS --public "${pub:-$pub_inline}" || { echo "verify-download: BAD SIGNATURE on SHA256SUMS" >&2; exit 1; }
else
  echo "verify-download: install minisign first (sudo apt-get install minisign)" >&2
  exit 2
fi

present=0
while read -r _ name; do
  [ -f "$name" ] && present=$((present + 1))
done < SHA256SUMS
if [ "$present" -eq 0 ]; then
  echo "verify-download: none of the packages listed in SHA256SUMS is in $dir" >&2
  exit 1
fi
if sha256sum --check --ignore-missing SHA256SUMS; then
  echo "verify-download: OK: $present package(s) match the lead-signed SHA256SUMS"
else
  echo "verify-download: a package does NOT match SHA256SUMS; do not install it" >&2
  exit 1
fi
