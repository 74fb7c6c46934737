#!/bin/sh
# readpath.sh — the NVML read path on a lent GPU, read-only: for each pflex
# binary given, one sample (process start included), 200 back-to-back
# samples, and 20 samples 100 ms apart, through libnvml_readonly.so, run by
# the carried loader as h200_run.sh does (tools/device/README.md).  Times on
# stdout; the samples as CSV in $OUT.  NVML_REAL_LIB set: that library
# instead of the machine's (the fake NVML, to try the script without a GPU).
#   OUT=out sh tools/device/readpath.sh .devpkg/bin/pflex.old .devpkg/bin/pflex
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
PK=$PWD/.devpkg
REAL=${NVML_REAL_LIB:-$(ldconfig -p 2>/dev/null | awk '/libnvidia-ml.so.1 /{print $NF; exit}')}
[ -n "$REAL" ] || REAL=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
export NVML_REAL_LIB="$REAL" PFLEX_NVML_LIB="$PK/lib/libnvml_readonly.so"
echo "real NVML: $REAL"
now() { date +%s.%N; }
dt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
for b in "$@"; do
    n=$(basename "$b")
    PF="$PK/lib/ld-linux-x86-64.so.2 --library-path $PK/lib $b"
    t0=$(now); $PF telemetry --nvml --samples 1 --interval-ms 0 >/dev/null 2>"$OUT/$n.err"; t1=$(now)
    $PF telemetry --nvml --samples 200 --interval-ms 0 --csv >"$OUT/$n.i0.csv" 2>>"$OUT/$n.err"
    t2=$(now)
    $PF telemetry --nvml --samples 20 --interval-ms 100 --csv >"$OUT/$n.i100.csv" 2>>"$OUT/$n.err"
    t3=$(now)
    echo "$n: 1 sample $(dt "$t0" "$t1") s; 200 samples at 0 ms $(dt "$t1" "$t2") s;" \
         "20 samples at 100 ms $(dt "$t2" "$t3") s"
done
nvidia-smi --query-gpu=name,power.limit --format=csv
