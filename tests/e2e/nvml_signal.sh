#!/bin/sh
# A sweep stopped by any signal whose default action kills (SIGTERM, SIGINT,
# SIGHUP, SIGQUIT, SIGUSR1 that Slurm sends before a time limit, SIGUSR2,
# SIGALRM, SIGXCPU) puts the original power limit back (a non-default one,
# read from the device and kept with --keep-found-limit) before it dies of
# the signal.
set -u
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; rm -rf "$tmp"' EXIT
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL
fail() { echo "FAIL: $*"; exit 1; }

for sig in TERM INT HUP QUIT USR1 USR2 ALRM XCPU; do
    printf 'gpu0.limit_mw=650000\ngpu1.limit_mw=600000\n' >"$FAKE_NVML_STATE"
    "$PFLEX" sweep --backend nvml --keep-found-limit --power-only --caps 500,400 --settle 5 --window 5 \
        --out "$tmp/sweep.csv" 2>"$tmp/err" &
    pid=$!
    i=0
    until grep -qx 'gpu1.limit_mw=500000' "$FAKE_NVML_STATE" 2>/dev/null; do
        [ $i -lt 500 ] || fail "the sweep never set the cap"
        sleep 0.01; i=$((i + 1))
    done
    kill -$sig $pid
    wait $pid
    rc=$?
    pid=
    cat "$tmp/err"
    [ $rc -gt 128 ] || fail "SIG$sig: exit status $rc, expected death by the signal"
    grep -qx 'gpu0.limit_mw=650000' "$FAKE_NVML_STATE" || fail "SIG$sig: GPU 0 not restored"
    grep -qx 'gpu1.limit_mw=600000' "$FAKE_NVML_STATE" || fail "SIG$sig: GPU 1 not restored"
    grep -q 'original power limits restored' "$tmp/err" || fail "SIG$sig: no restore message"
    grep -q "stopped by SIG$sig" "$tmp/err" || fail "SIG$sig: the signal is not named"
    [ -z "$(ls "$PFLEX_STATE_DIR"/*.state 2>/dev/null)" ] || fail "SIG$sig: a state file is left"
done
echo ok
