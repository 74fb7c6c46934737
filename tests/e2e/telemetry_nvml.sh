#!/bin/sh
# pflex telemetry --nvml against the fake NVML: live samples of both fake
# GPUs as DCGM fields (GPM ratios from the second sample on), features from
# them, and no limit touched.
set -u
P=${PFLEX:-build/pflex}
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export FAKE_NVML_STATE="$T/state" PFLEX_NVML_LIB="$FAKE"
unset FAKE_NVML_FAIL
fail() { echo "FAIL: $*"; exit 1; }

"$P" telemetry --nvml --samples 3 --interval-ms 20 --job live --host n1 --csv > "$T/live.csv" \
    || fail "exit $?"
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
PFLEX_NVML_LIB="$T/none.so" "$P" telemetry --nvml --samples 1 > "$T/out" 2> "$T/err"; rc=$?
[ $rc -eq 1 ] || fail "missing NVML: exit $rc"
[ -s "$T/out" ] && fail "missing NVML: wrote to stdout"
exit 0
