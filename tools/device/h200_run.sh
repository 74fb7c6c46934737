#!/bin/sh
# h200_run.sh — one prepared, read-only measuring run on a lent GPU machine.
#
# Runs from the repository root there, with .devpkg carried (pflex built against GSL's reference CBLAS,
# its shared libraries and loader, and libnvml_readonly.so: see tools/device/README.md).  Every NVML call
# pflex makes goes through libnvml_readonly.so, which refuses every setter: no power limit, clock,
# persistence or MIG setting is changed.  Results land in $OUT/h200.tar.gz (rewritten after each job, so a
# run stopped at its limit still returns what it measured) and $OUT/log.txt.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R=/tmp/pflex-h200; rm -rf "$R"; mkdir -p "$R/runs"
exec > "$OUT/log.txt" 2>&1
PK=$PWD/.devpkg
REAL=$(ldconfig -p 2>/dev/null | awk '/libnvidia-ml.so.1 /{print $NF; exit}')
[ -n "$REAL" ] || REAL=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
export NVML_REAL_LIB="$REAL" PFLEX_NVML_LIB="$PK/lib/libnvml_readonly.so"
echo "real NVML: $REAL"
PF="env LD_LIBRARY_PATH=$PK/lib $PK/bin/pflex"
if ! $PF --version; then
    PF="$PK/lib/ld-linux-x86-64.so.2 --library-path $PK/lib $PK/bin/pflex"; $PF --version || exit 1
fi
nvidia-smi -q > "$R/runs/nvidia-smi-q.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,power.min_limit,power.max_limit,clocks.max.sm,clocks.max.mem --format=csv
# The whole run as nvidia-smi sees it, beside pflex's own samples.
Q=timestamp,index,power.draw,power.limit,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu,utilization.memory,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown
nvidia-smi --query-gpu=$Q --format=csv -lms 500 > "$R/runs/nvidia-smi-query.csv" 2>&1 &
SMI=$!
# Idle GPU, then the NVML read path: 200 back-to-back samples through the read-only shim.
$PF telemetry --nvml --job idle --samples 10 --interval-ms 500 --csv > "$R/runs/idle.tm.csv"
now() { python3 -c "import time; print(time.time())"; }
t0=$(now); $PF telemetry --nvml --samples 1 --interval-ms 0 >/dev/null; t1=$(now)
$PF telemetry --nvml --samples 200 --interval-ms 0 --csv > "$R/runs/readpath.tm.csv"; t2=$(now)
echo "nvml read path: 1 sample (process start included) $(python3 -c "print(round($t1 - $t0, 3))") s; 200 samples $(python3 -c "print(round($t2 - $t1, 3))") s"

cp ${JOBS:-tools/device/h200_jobs.json} tools/device/loops.py "$R/runs/"
OUT="$OUT" PYTHONUNBUFFERED=1 timeout "${LOOPS_S:-480}" python3 tools/device/loops.py ${JOBS:-tools/device/h200_jobs.json} "$R/runs" $PF
echo "loops rc=$?"
kill $SMI 2>/dev/null
nvidia-smi --query-gpu=power.limit,clocks.sm --format=csv
tar czf "$OUT/h200.tar.gz" -C "$R" runs
ls -la "$R/runs"
