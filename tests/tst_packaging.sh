#!/usr/bin/env bash
# Packaging test (cmake/DedlocPackaging.cmake): builds the .deb with cpack, unpacks it with
# dpkg-deb -x into a temporary root, runs the packaged `dedloc --version` and verifies the
# packaged run manifest (signature by the packaged lead key, file hashes). Needs the full build
# (dedloc links libtorch); exits 77 (skipped) when dedloc or dedloc-lead is not built.
set -euo pipefail
build=$(cd "$1" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
for t in app/dedloc app/dedloc-lead app/dedloc-lead-serve app/dedloc-lead-model lib/libdedloc_sentencepiece.so; do
  if [ ! -e "$build/$t" ]; then echo "SKIP: $build/$t is not built (build everything first)"; exit 77; fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" > "$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$tmp"/pkg/*.deb)
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
info=$(dpkg-deb -I "$deb")
grep -q "^ Package: dedloc-desktop$" <<<"$info" || fail "package name: $info"
grep -q "^ Version: $version$" <<<"$info" || fail "package version (expected $version): $info"
grep -q "^ Depends: .*libtorch" <<<"$info" || fail "dpkg-shlibdeps found no libtorch dependency: $info"
grep -q "^ Depends: .*libopenblas0-openmp | libopenblas0-pthread" <<<"$info" \
  || fail "the package does not pull in an optimised BLAS (libtorch would run on the reference one): $info"

dpkg-deb -x "$deb" "$tmp/root"
usr="$tmp/root/usr"
for f in bin/dedloc bin/dedloc-lead lib/dedloc/libdedloc_sentencepiece.so lib/dedloc/dedloc-lead-serve lib/dedloc/dedloc-lead-model \
         share/dedloc/default-run/manifest.json share/dedloc/default-run/manifest.json.minisig \
         share/dedloc/default-run/lead.pub share/dedloc/default-run/tokenizer.model \
         share/metainfo/org.dedloc.Desktop.metainfo.xml share/applications/dedloc.desktop \
         share/icons/hicolor/scalable/apps/dedloc.svg lib/systemd/user/dedloc.service; do
  [ -e "$usr/$f" ] || fail "the package lacks /usr/$f"
done

out=$("$usr/bin/dedloc" --version)
[ "$out" = "dedloc $version" ] || fail "packaged dedloc --version printed '$out', expected 'dedloc $version'"

# The packaged programs together: a peer key from dedloc, a token for it from dedloc-lead.
peer=$("$usr/bin/dedloc" --print-peer-key --data-dir "$tmp/data" 2>/dev/null)
[[ "$peer" =~ ^[0-9a-f]{64}$ ]] || fail "dedloc --print-peer-key printed '$peer'"
"$usr/bin/dedloc-lead" keygen --out "$tmp/keys" --no-password > /dev/null
token=$("$usr/bin/dedloc-lead" issue-token --secret "$tmp/keys/lead.key" --run-id bn-albert-demo --peer-key "$peer" --name test --expires-in 1)
[[ "$token" == dlt1.* ]] || fail "issue-token printed '$token'"

run="$usr/share/dedloc/default-run"
out=$("$usr/bin/dedloc-lead" verify "$run/manifest.json" --public "$run/lead.pub") || fail "packaged manifest does not verify: $out"
grep -q "^Trusted comment: dedloc default run" <<<"$out" || fail "unexpected trusted comment: $out"
"$usr/bin/dedloc-lead" verify-run "$run/manifest.json" > /dev/null || fail "packaged run files do not match the manifest's hashes"
# The packaged `dedloc-lead serve` finds its program in ../lib/dedloc.
out=$("$usr/bin/dedloc-lead" serve --help) || fail "packaged dedloc-lead serve --help failed: $out"
grep -q -- "--dht-port" <<<"$out" || fail "packaged dedloc-lead serve --help printed no options: $out"
# ... and evaluate/export theirs; the bundled run ships its downstream task (SIB-200, with its licence).
out=$("$usr/bin/dedloc-lead" evaluate --help) || fail "packaged dedloc-lead evaluate --help failed: $out"
grep -q -- "--checkpoint" <<<"$out" || fail "packaged dedloc-lead evaluate --help printed no options: $out"
out=$("$usr/bin/dedloc-lead" export --help) || fail "packaged dedloc-lead export --help failed: $out"
grep -q -- "--out" <<<"$out" || fail "packaged dedloc-lead export --help printed no options: $out"
for f in train.tsv dev.tsv test.tsv labels.txt SOURCE.md; do
  [ -s "$run/eval/bn_sib200_topic/$f" ] || fail "the package lacks the bundled evaluation task's $f"
done

# Control: the same check refuses the packaged manifest with one byte changed.
cp "$run/manifest.json" "$tmp/manifest.json"
cp "$run/manifest.json.minisig" "$tmp/manifest.json.minisig"
sed -i '0,/"fp16"/s//"fp32"/' "$tmp/manifest.json"
cmp -s "$run/manifest.json" "$tmp/manifest.json" && fail "the control edit changed nothing"
if "$usr/bin/dedloc-lead" verify "$tmp/manifest.json" --public "$run/lead.pub" 2>/dev/null; then
  fail "a changed manifest verified"
fi
echo "PASS: $(basename "$deb") ($(du -h "$deb" | cut -f1)): dedloc $version runs from the unpacked package; its manifest verifies against its lead key; a changed byte is refused"
