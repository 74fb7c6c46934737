#!/bin/sh
# The NVML read path's cost per sample, against the fake NVML (not a GPU):
# pflex telemetry --nvml --samples N --interval-ms 0 on one fake GPU with
# GPM, its nvmlDeviceGetPcieThroughput made to take PCIE_MS (default 20,
# what the driver's call takes: it counts bytes over 20 ms) and, as a
# floor, 0.  Prints wall seconds for N samples and milliseconds a sample,
# the median of REPS runs (process start included, 1 sample subtracted).
#   sh bench/nvml_read.sh [PFLEX]     (needs make test-bins for the fake)
# Nothing here asserts a time.
set -eu
BUILD=${BUILD:-build}
P=${1:-$BUILD/pflex}
FAKE=$BUILD/fake-nvml/libnvidia-ml.so.1
N=${N:-200}
REPS=${REPS:-5}
[ -f "$FAKE" ] || { echo "the fake NVML is not built (make test-bins)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PFLEX_NVML_LIB="$FAKE" FAKE_NVML_STATE="$T/state"
unset FAKE_NVML_FAIL
# wall seconds of one run, samples $1
run() {
    t0=$(date +%s.%N)
    "$P" telemetry --nvml --samples "$1" --interval-ms 0 --csv >/dev/null 2>&1
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "pflex: $P; one fake GPU with GPM; $N samples, --interval-ms 0; median of $REPS"
for ms in ${PCIE_MS:-20} 0; do
    printf 'gpus=1\npcie_ms=%s\n' "$ms" >"$T/state"
    one=$(i=0; while [ $i -lt "$REPS" ]; do run 1; i=$((i + 1)); done | median)
    all=$(i=0; while [ $i -lt "$REPS" ]; do run "$N"; i=$((i + 1)); done | median)
    echo "$ms $one $all $N" | awk '{printf "  PCIe call %2d ms: 1 sample %.3f s, %d samples %.3f s: %.3f ms a sample\n",
        $1, $2, $4, $3, ($3 - $2) / ($4 - 1) * 1000}'
done
