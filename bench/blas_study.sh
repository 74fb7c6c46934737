#!/bin/sh
# make bench: the extended study (`pflex study --fleet extended`, 2430
# generated groups; through the reference CBLAS about 60 % of its time is
# the Gaussian process's Cholesky inverses, docs/study.md) through
# OpenBLAS ($BUILD/pflex) beside the same objects linked with GSL's
# reference CBLAS ($BUILD/pflex-refblas), one run each, in turn.  Prints
# the CPU seconds (user + system of the whole process) of each, their
# ratio, and the largest relative difference between the two summary.json
# files over every number in them (runtime_s aside): the fits through
# OpenBLAS add in another order, so they may differ in the last bits.
# Nothing here asserts a time.
#   BUILD=build-bench sh bench/blas_study.sh
set -eu
BUILD=${BUILD:-build}
P=$BUILD/pflex
R=$BUILD/pflex-refblas
[ -x "$R" ] || { echo "  (no $R: make $R)"; exit 0; }
command -v python3 >/dev/null || { echo "  (python3 is not installed: the summaries are not compared)"; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cpu() {  # LABEL BINARY: the study's CPU seconds on stdout
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%U %S" -o "$T/$1.time" "$2" study --fleet extended --seed 1 --out "$T/$1" \
            >/dev/null 2>"$T/$1.err" || { echo "  ($1: the study failed: $(tail -1 "$T/$1.err"))" >&2; return 1; }
        awk '{ printf "%.2f", $1 + $2 }' "$T/$1.time"
    else
        t0=$(date +%s.%N)
        "$2" study --fleet extended --seed 1 --out "$T/$1" >/dev/null 2>"$T/$1.err" || return 1
        echo "$(date +%s.%N) - $t0" | bc
    fi
}
ref=$(cpu reference "$R")
opt=$(cpu openblas "$P")
printf '  extended study (2430 groups, seed 1), CPU s: reference CBLAS %s | OpenBLAS %s: x%s faster\n' "$ref" "$opt" \
    "$(echo "$ref $opt" | awk '{ printf "%.2f", $1 / $2 }')"
if command -v python3 >/dev/null; then
    python3 - "$T/reference/summary.json" "$T/openblas/summary.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
worst, where, n = 0.0, "", 0
def walk(x, y, path):
    global worst, where, n
    if isinstance(x, dict):
        if set(x) != set(y):
            raise SystemExit("  summaries differ in their keys at " + path)
        for k in x:
            if k != "runtime_s":
                walk(x[k], y[k], path + "." + k)
    elif isinstance(x, list):
        if len(x) != len(y):
            raise SystemExit("  summaries differ in length at " + path)
        for i, (u, v) in enumerate(zip(x, y)):
            walk(u, v, "%s[%d]" % (path, i))
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        n += 1
        d = abs(x - y) / max(abs(x), abs(y), 1e-300) if x != y else 0.0
        if d > worst:
            worst, where = d, path
    elif x != y:
        raise SystemExit("  summaries differ at %s: %r against %r" % (path, x, y))
walk(a, b, "")
print("  summary.json, %d numbers: largest relative difference %.2g%s" % (n, worst, " at " + where if where else ""))
EOF
fi
