#!/bin/sh
# The limit guard in pflex sweep --backend nvml, against the fake NVML: each
# way a sweep used to leave a wrong limit behind, reproduced, now ending at
# the original limits.
#   - `| head -1`: SIGPIPE restores, then the sweep dies of SIGPIPE;
#   - two sweeps at once: the second refuses, naming the first's pid, and
#     changes nothing; the first is unaffected;
#   - SIGKILL, then a new start: the saved original is restored and reported;
#   - a limit found at start that is not the default: named, not adopted;
#   - a transient error while restoring: retried, restored;
#   - an original outside the constraints now: the nearest settable value.
set -u
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; rm -rf "$tmp"' EXIT
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL FAKE_NVML_RANGE
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null; exit 1; }
fresh() { rm -f "$FAKE_NVML_STATE"; rm -rf "$PFLEX_STATE_DIR"; }
limit() { sed -n "s/^gpu$1.limit_mw=//p" "$FAKE_NVML_STATE"; }
wait_limit() {  # GPU mW: until the fake's state shows it (5 s at most)
    i=0
    until [ "$(limit "$1")" = "$2" ]; do
        [ $i -lt 500 ] || fail "GPU $1 never reached $2 mW"
        sleep 0.01; i=$((i + 1))
    done
}
no_state_left() { [ -z "$(ls "$PFLEX_STATE_DIR"/*.state 2>/dev/null)" ]; }

# SIGPIPE: the reader of stdout goes away after the header.  POSIX sh has
# no PIPESTATUS: the sweep's exit status is written out from a subshell.
fresh
timeout 60 sh -c '"$PFLEX" sweep --backend nvml --power-only --caps 500,400,300,250 \
    --window 0.2 --settle 0 2>"$0/err"; echo $? >"$0/rc"' "$tmp" | head -1 >"$tmp/head"
grep -q '^job,gpu,gpus,cap_w' "$tmp/head" || fail "head did not see the header"
[ "$(limit 0)" = 700000 ] && [ "$(limit 1)" = 700000 ] || fail "SIGPIPE left GPU limits $(limit 0) $(limit 1)"
grep -q 'stopped by SIGPIPE' "$tmp/err" || fail "SIGPIPE not reported"
[ "$(cat "$tmp/rc")" = 141 ] || fail "exit status after SIGPIPE: $(cat "$tmp/rc"), expected 141"
no_state_left || fail "SIGPIPE: a state file is left"

# Two sweeps at once: the second refuses and changes nothing.
fresh
"$PFLEX" sweep --backend nvml --power-only --caps 500,400 --settle 10 --window 1 \
    --out "$tmp/a.csv" 2>"$tmp/a.err" &
pid=$!
wait_limit 1 500000
"$PFLEX" sweep --backend nvml --power-only --caps 300 --settle 0 --window 0.05 \
    --out "$tmp/b.csv" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "the second sweep: exit $rc, expected 1"
grep -q "held by another pflex process (pflex sweep, pid $pid" "$tmp/err" \
    || fail "the refusal does not name the holder's pid $pid"
[ "$(limit 0)" = 500000 ] && [ "$(limit 1)" = 500000 ] || fail "the second sweep changed a limit"
[ ! -s "$tmp/b.csv" ] || fail "the second sweep wrote rows"
kill -TERM $pid; wait $pid; pid=
[ "$(limit 0)" = 700000 ] && [ "$(limit 1)" = 700000 ] || fail "the first sweep did not restore"

# SIGKILL, then a new start: restored first, and said so.
fresh
"$PFLEX" sweep --backend nvml --power-only --caps 450 --settle 30 --window 1 \
    --out "$tmp/k.csv" 2>"$tmp/err" &
pid=$!
wait_limit 1 450000
kill -KILL $pid; wait $pid 2>/dev/null; pid=
[ "$(limit 0)" = 450000 ] || fail "SIGKILL: the fake should still be at the cap"
ls "$PFLEX_STATE_DIR"/*.state >/dev/null 2>&1 || fail "no saved original after SIGKILL"
"$PFLEX" sweep --backend nvml --power-only --caps 600 --settle 0 --window 0.05 \
    --out "$tmp/k2.csv" 2>"$tmp/err" || fail "the restart failed"
grep -q 'ended without restoring the power limit (450 W found); restored the original 700 W' \
    "$tmp/err" || fail "the recovery is not reported"
[ "$(limit 0)" = 700000 ] && [ "$(limit 1)" = 700000 ] || fail "not at the originals after the restart"
no_state_left || fail "a state file is left after the restart"

# A cap someone left (no state file: another tool, or a state folder lost):
# named, and the default, not it, is restored.
fresh
printf 'gpu0.limit_mw=450000\n' >"$FAKE_NVML_STATE"
"$PFLEX" sweep --backend nvml --power-only --caps 600 --settle 0 --window 0.05 \
    --out "$tmp/l.csv" 2>"$tmp/err" || fail "the sweep over a left-over cap failed"
grep -q 'GPU 0 .*the limit found, 450 W, is not the default 700 W: taken as a cap left behind' \
    "$tmp/err" || fail "the left-over cap is not named"
[ "$(limit 0)" = 700000 ] || fail "GPU 0 back at $(limit 0) mW, not the default"
# --keep-found-limit: a site's own lower limit stays.
printf 'gpu0.limit_mw=450000\n' >"$FAKE_NVML_STATE"
"$PFLEX" sweep --backend nvml --power-only --caps 600 --settle 0 --window 0.05 --keep-found-limit \
    --out "$tmp/l.csv" 2>"$tmp/err" || fail "--keep-found-limit failed"
[ "$(limit 0)" = 450000 ] || fail "--keep-found-limit: GPU 0 at $(limit 0) mW"

# A transient error on the restore (the 3rd set of GPU 0 fails once): retried.
fresh
FAKE_NVML_FAIL=set_limit/0:UNKNOWN:2:1 "$PFLEX" sweep --backend nvml --power-only --caps 500,400 \
    --settle 0 --window 0.05 --out "$tmp/t.csv" 2>"$tmp/err" || fail "a transient restore error failed the sweep"
grep -q 'GPU 0 .*restored to 700 W after 1 failed attempt' "$tmp/err" || fail "the retry is not reported"
[ "$(limit 0)" = 700000 ] && [ "$(limit 1)" = 700000 ] || fail "transient error: limits $(limit 0) $(limit 1)"

# The range shrinks under the sweep (after its first set, GPU 1 allows at
# most 600 W): the original 700 W is outside, 600 W is restored and said.
fresh
FAKE_NVML_RANGE=1:200000:600000:1 "$PFLEX" sweep --backend nvml --power-only --caps 500 \
    --settle 0 --window 0.05 --out "$tmp/r.csv" 2>"$tmp/err" || fail "the sweep with a range change failed"
grep -q 'GPU 1 .*the original limit 700 W is outside the range the device allows now (200-600 W); restored to 600 W' \
    "$tmp/err" || fail "the clamped restore is not reported"
[ "$(limit 0)" = 700000 ] && [ "$(limit 1)" = 600000 ] || fail "range change: limits $(limit 0) $(limit 1)"
echo ok
