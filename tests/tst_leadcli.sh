#!/usr/bin/env bash
# dedloc-lead's key commands end to end (app/dedloc-lead/KeyCommands.cpp): keygen with a
# password from the environment, sign (which refuses a run manifest peers would refuse), verify,
# minisign interop, rotate-key, issue-token, and exit code 2 with a message for bad input, also
# of evaluate and export.
set -euo pipefail
lead=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect CODE TEXT -- command...: exit code and a stderr/stdout substring
expect() {
  local code=$1 text=$2; shift 3
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" = "$code" ] || fail "'$*' exited $rc, expected $code: $out"
  grep -qF -- "$text" <<<"$out" || fail "'$*' did not say '$text': $out"
}

export LEAD_PW='pass phrase 1'
# --kdf interactive: 16 MiB scrypt instead of minisign's 1 GiB, to keep the test fast.
expect 0 "password-protected" -- "$lead" keygen --out "$tmp/k" --password-env LEAD_PW --kdf interactive
expect 2 "--kdf takes" -- "$lead" keygen --out "$tmp/k4" --password-env LEAD_PW --kdf cheap
[ "$(stat -c %a "$tmp/k/lead.key")" = 600 ] || fail "secret key mode is not 0600"
expect 2 "choose --password-env" -- "$lead" keygen --out "$tmp/k2"
expect 2 "is not set or empty" -- "$lead" keygen --out "$tmp/k2" --password-env NO_SUCH_VARIABLE_SET
expect 2 "already exists" -- "$lead" keygen --out "$tmp/k" --no-password
expect 2 "give --out DIR" -- "$lead" keygen --no-password
expect 2 "Unknown option" -- "$lead" keygen --out "$tmp/k3" --password hunter2

echo "artifact" > "$tmp/a.bin"
expect 2 "password-protected: give --password-env" -- "$lead" sign "$tmp/a.bin" --secret "$tmp/k/lead.key"
expect 2 "wrong password" -- env LEAD_PW=nope "$lead" sign "$tmp/a.bin" --secret "$tmp/k/lead.key" --password-env LEAD_PW
expect 0 "signed" -- "$lead" sign "$tmp/a.bin" --secret "$tmp/k/lead.key" --password-env LEAD_PW --trusted-comment "release 1"
expect 0 "Trusted comment: release 1" -- "$lead" verify "$tmp/a.bin" --public "$tmp/k/lead.pub"
printf 'pass phrase 1\n' | "$lead" sign "$tmp/a.bin" --secret "$tmp/k/lead.key" --password-stdin --trusted-comment "via stdin" > /dev/null
expect 0 "Trusted comment: via stdin" -- "$lead" verify "$tmp/a.bin" --public "$tmp/k/lead.pub"
if command -v minisign > /dev/null; then
  expect 0 "Trusted comment: via stdin" -- minisign -V -p "$tmp/k/lead.pub" -m "$tmp/a.bin"
fi
echo "artifacT" > "$tmp/a.bin"
expect 1 "signature verification failed" -- "$lead" verify "$tmp/a.bin" --public "$tmp/k/lead.pub"
expect 2 "give one FILE and --public" -- "$lead" verify "$tmp/a.bin"
expect 2 "is not a regular file" -- "$lead" sign "$tmp/missing" --secret "$tmp/k/lead.key" --password-env LEAD_PW
# A run manifest is signed only if peers would accept it, and then no file of the command is.
manifest=$(dirname "$(readlink -f "$0")")/../resources/default-run/manifest.json
mkdir "$tmp/run"
sed 's/"run_id": "[^"]*"/"run_id": "no spaces allowed"/' "$manifest" > "$tmp/run/manifest.json"
grep -q '"run_id": "no spaces allowed"' "$tmp/run/manifest.json" || fail "the bundled manifest has no run_id to break"
expect 2 "is a run manifest that peers would refuse: " -- "$lead" sign "$tmp/a.bin" "$tmp/run/manifest.json" --secret "$tmp/k/lead.key" --password-env LEAD_PW
expect 2 "run_id" -- "$lead" sign "$tmp/run/manifest.json" --secret "$tmp/k/lead.key" --password-env LEAD_PW
sed '0,/,$/s/,$//' "$manifest" > "$tmp/run/manifest.json" # a comma missing: not JSON at all
expect 2 "is a run manifest that peers would refuse: " -- "$lead" sign "$tmp/run/manifest.json" --secret "$tmp/k/lead.key" --password-env LEAD_PW
[ ! -e "$tmp/run/manifest.json.minisig" ] || fail "an invalid manifest was signed"
expect 1 "signature verification failed" -- "$lead" verify "$tmp/a.bin" --public "$tmp/k/lead.pub"
cp "$manifest" "$tmp/run/manifest.json"
expect 0 "signed" -- "$lead" sign "$tmp/run/manifest.json" --secret "$tmp/k/lead.key" --password-env LEAD_PW

# Rotation: old key signs the new one into a run directory.
mkdir -p "$tmp/run"
expect 0 "" -- "$lead" keygen --out "$tmp/new" --no-password
expect 0 "wrote" -- "$lead" rotate-key --old-secret "$tmp/k/lead.key" --password-env LEAD_PW --new-public "$tmp/new/lead.pub" --run "$tmp/run"
ls "$tmp"/run/rotations/*.pub.minisig > /dev/null || fail "no rotation statement written"
expect 2 "is not a directory" -- "$lead" rotate-key --old-secret "$tmp/k/lead.key" --new-public "$tmp/new/lead.pub" --run "$tmp/nowhere"

# Tokens.
peer=$(printf '%064x' 7)
peer=${peer//0/a}
expect 0 "dlt1." -- "$lead" issue-token --secret "$tmp/new/lead.key" --run-id demo --peer-key "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" --name alice --expires-in 24
expect 2 "64 hex digits" -- "$lead" issue-token --secret "$tmp/new/lead.key" --run-id demo --peer-key abc --name alice
expect 2 "--expires-in takes" -- "$lead" issue-token --secret "$tmp/new/lead.key" --run-id demo --peer-key "$peer" --name alice --expires-in -1
expect 2 "usage: dedloc-lead" -- "$lead" no-such-command

# evaluate and export (dedloc-lead-model): bad input is refused at once, before any fine-tuning.
expect 2 "evaluate     fine-tune" -- "$lead"
expect 2 "give --checkpoint FILE, or --random-init" -- "$lead" evaluate
expect 2 "not both" -- "$lead" evaluate --checkpoint "$tmp/a.bin" --random-init
expect 2 "is a directory: give a file name" -- "$lead" evaluate --random-init --json "$tmp"
expect 2 "cannot write into $tmp/nowhere" -- "$lead" evaluate --random-init --json "$tmp/nowhere/r.json"
expect 2 "--epochs expects a whole number" -- "$lead" evaluate --random-init --epochs 1.5
expect 2 "not a DeDLOC checkpoint" -- "$lead" evaluate --checkpoint "$tmp/a.bin"
expect 2 "give --checkpoint FILE and --out DIR" -- "$lead" export --checkpoint "$tmp/a.bin"
expect 2 "not a DeDLOC checkpoint" -- "$lead" export --checkpoint "$tmp/a.bin" --out "$tmp/hf"
[ ! -e "$tmp/hf/config.json" ] || fail "export wrote files for a checkpoint it refused"

# serve: the swarm options it takes are checked before anything starts.
expect 2 "give the host alone" -- "$lead" serve --data-dir "$tmp/serve" --announce 203.0.113.7:40000
expect 2 "--announce 40000" -- "$lead" serve --data-dir "$tmp/serve" --announce 40000
expect 2 "--all-reduce-port takes" -- "$lead" serve --data-dir "$tmp/serve" --all-reduce-port 70000
expect 2 "--average-state-every takes" -- "$lead" serve --data-dir "$tmp/serve" --average-state-every -1
# --no-port-mapping: listed, and taken (the refusal that follows is another option's).
expect 0 "  --no-port-mapping" -- "$lead" serve --help
expect 2 "--all-reduce-port takes" -- "$lead" serve --data-dir "$tmp/serve" --no-port-mapping --all-reduce-port 70000
# make-run: options are checked, with the option named, before any corpus is copied.
mr=("$lead" make-run --corpus "$tmp/a.bin" --out "$tmp/mr" --run-id mr --preset tiny --target-batch-size 64)
expect 2 "--local-updates takes the samples of each inner step (1 or more), got 0" -- "${mr[@]}" --local-updates 0
expect 2 "--local-updates takes a number, got \"abc\"" -- "${mr[@]}" --local-updates abc
expect 2 "--micro-batch-size takes a number" -- "${mr[@]}" --micro-batch-size many
expect 2 "--outer-momentum takes a number, got \"nan\"" -- "${mr[@]}" --local-updates 16 --outer-momentum nan
expect 2 "apply to --local-updates only" -- "${mr[@]}" --outer-learning-rate 0.5
expect 2 "unknown --compression bogus (none, fp16" -- "${mr[@]}" --compression bogus
expect 2 "unknown --compression sparse_fp16 (none, fp16, uniform8bit, blockwise8bit, size_adaptive, topk4bit)" -- "${mr[@]}" --compression sparse_fp16
expect 2 "averaging.inner_batch_size: is 65, more than training.target_batch_size 64" -- "${mr[@]}" --local-updates 65
expect 2 "averaging.outer_momentum" -- "${mr[@]}" --local-updates 16 --outer-momentum 1
[ ! -e "$tmp/mr" ] || fail "make-run created $tmp/mr for settings it refused"
echo "PASS: dedloc-lead keygen/sign/verify/rotate-key/issue-token/evaluate/export, serve and make-run options and their refusals"
