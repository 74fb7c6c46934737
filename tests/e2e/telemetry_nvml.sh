#!/bin/sh
# pflex telemetry --nvml against the fake NVML: live samples of both fake
# GPUs as DCGM fields (GPM ratios from the second sample on, 100 ms apart or
# more), features from them, and no limit touched.
set -u
P=${PFLEX:-build/pflex}
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export FAKE_NVML_STATE="$T/state" PFLEX_NVML_LIB="$FAKE"
unset FAKE_NVML_FAIL
fail() { echo "FAIL: $*"; exit 1; }

"$P" telemetry --nvml --samples 3 --interval-ms 100 --job live --host n1 --csv > "$T/live.csv" \
    2> "$T/err" || fail "exit $?"
[ -s "$T/err" ] && fail "stderr at 100 ms: $(cat "$T/err")"
head -1 "$T/live.csv" | grep -qx 'job,host,gpu,uuid,time_s,field,value' || fail "header"
[ "$(grep -c '^live,n1,0,,.*,DCGM_FI_DEV_POWER_USAGE,' "$T/live.csv")" -eq 3 ] || fail "GPU 0 power samples"
[ "$(grep -c '^live,n1,1,,.*,DCGM_FI_DEV_POWER_USAGE,' "$T/live.csv")" -eq 3 ] || fail "GPU 1 power samples"
grep -q ',DCGM_FI_PROF_DRAM_ACTIVE,' "$T/live.csv" || fail "no GPM DRAM activity"
grep -q ',DCGM_FI_DEV_ENFORCED_POWER_LIMIT,700$' "$T/live.csv" || fail "no enforced limit"
"$P" features --csv "$T/live.csv" > "$T/f.csv" || fail "features from live samples"
grep -q '^live,2,' "$T/f.csv" || fail "features: job live on 2 GPUs"
grep -qx 'gpu0.limit_mw=700000' "$T/state" || fail "a limit changed"
grep -qx 'gpu1.limit_mw=700000' "$T/state" || fail "a limit changed"
"$P" telemetry --nvml x.csv > "$T/out" 2>&1; [ $? -eq 2 ] || fail "--nvml with a file"
# Closer than GPM's 100 ms refresh: said on stderr, and GPM fields only in
# samples 100 ms or more apart (the fake refreshing as real GPUs do, stale
# pairs reading 0): never a 0, at most 3 in 12 samples 20 ms or more apart.
printf 'gpus=1\ngpm_refresh_ms=100\n' > "$T/state"
"$P" telemetry --nvml --samples 12 --interval-ms 20 --csv > "$T/fast.csv" 2> "$T/err" \
    || fail "20 ms: exit $?"
grep -q "note: --interval-ms 20 is below GPM's 100 ms refresh" "$T/err" || fail "no note: $(cat "$T/err")"
[ "$(grep -c ',DCGM_FI_DEV_POWER_USAGE,' "$T/fast.csv")" -eq 12 ] || fail "20 ms: power samples"
n=$(grep -c ',DCGM_FI_PROF_DRAM_ACTIVE,' "$T/fast.csv")
[ "$n" -ge 1 ] && [ "$n" -le 3 ] || fail "20 ms: $n GPM samples"
grep -q ',DCGM_FI_PROF_[A-Z_]*,0$' "$T/fast.csv" && fail "20 ms: a stale GPM 0"
PFLEX_NVML_LIB="$T/none.so" "$P" telemetry --nvml --samples 1 > "$T/out" 2> "$T/err"; rc=$?
[ $rc -eq 1 ] || fail "missing NVML: exit $rc"
[ -s "$T/out" ] && fail "missing NVML: wrote to stdout"
exit 0
