#!/bin/sh
# Failures of pflex sweep --backend nvml: NVML errors exit 1 naming the GPU
# and NVML's error and restore what was changed; bad usage exits 2 before
# anything changes, with nothing on stdout.
set -u
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null; exit 1; }
fresh() { rm -f "$FAKE_NVML_STATE"; }
limits_are() {
    grep -qx "gpu0.limit_mw=$1" "$FAKE_NVML_STATE" && grep -qx "gpu1.limit_mw=$2" "$FAKE_NVML_STATE"
}
# run EXPECTED_RC [FAKE_NVML_FAIL] -- pflex sweep arguments...
run() {
    want=$1; rule=$2; shift 3
    FAKE_NVML_FAIL="$rule" "$PFLEX" sweep --backend nvml "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq "$want" ] || fail "pflex sweep $* (FAKE_NVML_FAIL=$rule): exit $rc, expected $want"
}
quick="--power-only --window 0.05 --settle 0"

# No permission on the first set: exit 1, the GPU and NVML's words.
fresh
run 1 set_limit:NO_PERMISSION -- $quick --caps 500
grep -q 'GPU 0 (NVIDIA H200)' "$tmp/err" || fail "the message does not name the GPU"
grep -q 'Insufficient Permissions' "$tmp/err" || fail "the message lacks NVML's error"
limits_are 700000 700000 || fail "a limit changed"

# GPU 0 takes the cap, GPU 1 refuses: GPU 0 is restored.
fresh
run 1 set_limit/1:NO_PERMISSION -- $quick --caps 500
grep -q 'GPU 1 (NVIDIA H200).*Insufficient Permissions' "$tmp/err" || fail "no GPU 1 message"
grep -q 'original power limits restored' "$tmp/err" || fail "no restore message"
limits_are 700000 700000 || fail "GPU 0 not restored"

# Permission lost after the first cap (and back for the restore).
fresh
run 1 set_limit:NO_PERMISSION:2:1 -- $quick --caps 500,400
limits_are 700000 700000 || fail "not restored after a mid-sweep failure"
[ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "the rows measured before the failure are lost"

# The GPU falls off the bus mid-sweep: exit 1, and the failed restore is said.
fresh
run 1 any:GPU_IS_LOST:80 -- $quick --caps 500,400,300
grep -q 'GPU is lost' "$tmp/err" || fail "no GPU lost message"
grep -q 'could not restore' "$tmp/err" || fail "the failed restore is not reported"

# No driver.
fresh
run 1 init:DRIVER_NOT_LOADED -- --list
grep -q 'Driver Not Loaded' "$tmp/err" || fail "no driver message"
run 1 "" -- --list --nvml-lib "$tmp/no-such-lib.so.1"
grep -q 'cannot load NVML' "$tmp/err" || fail "no missing-library message"

# Bad usage: exit 2 before any change, nothing on stdout.
fresh
run 2 "" -- $quick --caps 800
grep -q '800 W is outside GPU 0 (NVIDIA H200) range 200-700 W' "$tmp/err" || fail "range message"
[ ! -s "$tmp/out" ] || fail "stdout written on bad usage"
run 2 "" -- --caps 500
grep -q 'throughput-file' "$tmp/err" || fail "no throughput source not explained"
run 2 "" -- $quick --gpus 0,5
grep -q 'GPU 5 does not exist' "$tmp/err" || fail "bad --gpus not explained"
run 2 "" -- $quick --window abc
run 2 "" -- $quick --bogus
run 2 "" -- --throughput-file "$tmp/missing" --caps 500
limits_are 700000 700000 || fail "bad usage changed a limit"

# A job that stops writing: exit 2 with the reason, limits restored.
echo "1764690000.0 1000" >"$tmp/tokens"
run 2 "" -- --throughput-file "$tmp/tokens" --window 0.05 --settle 0 --caps 500
grep -q 'no new line during' "$tmp/err" || fail "stale throughput file not explained"
limits_are 700000 700000 || fail "not restored after a stale throughput file"
printf 'garbage here\n' >"$tmp/tokens"
run 2 "" -- --throughput-file "$tmp/tokens" --window 0.05 --settle 0 --caps 500
grep -q "is not 'UNIX_TIME TOKENS_TOTAL'" "$tmp/err" || fail "bad throughput line not explained"
echo ok
