#!/bin/sh
# pflex pfi end to end: outputs, the Emerald file through --columns, and
# bad input that must exit 2 naming file and line with nothing on stdout.
set -u
P=${PFLEX:-build/pflex}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$P" pfi --help | grep -q 'usage: pflex pfi' || fail "--help"
"$P" pfi tests/data/sweep_basic.csv > "$T/table" || fail "table exit"
grep -q '^alpha ' "$T/table" || fail "table has no alpha"
"$P" pfi --json tests/data/sweep_basic.csv > "$T/json" || fail "json exit"
for k in '"range"' '"jobs"' '"job"' '"gpus"' '"baseline_power_w"' '"baseline_throughput"' \
         '"pfi"' '"range_used"' '"shed"' '"flex1"' '"flex2"' '"flex3"'; do
    grep -q "$k" "$T/json" || fail "json lacks $k"
done
"$P" pfi --csv tests/data/sweep_basic.csv > "$T/csv" || fail "csv exit"
head -1 "$T/csv" | grep -qx 'job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w,points_used,points_dropped,shed_flex1,shed_flex2,shed_flex3' || fail "csv header"
grep -q '^alpha,8,650,' "$T/csv" || fail "csv alpha row"
grep -q ',0.75,' "$T/csv" || fail "tier flex2 became floor 0.75"
# stdin
"$P" pfi --csv < tests/data/sweep_basic.csv | cmp -s - "$T/csv" || fail "stdin differs"

bad() { # name, expected message part, content
    printf '%b' "$3" > "$T/$1.csv"
    "$P" pfi "$T/$1.csv" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$1: exit $rc, want 2"
    [ -s "$T/out" ] && fail "$1: wrote to stdout"
    grep -qF "$2" "$T/err" || fail "$1: stderr '$(cat "$T/err")' lacks '$2'"
}
bad empty "empty.csv: empty file" ""
bad missing "missing.csv:1: missing column 'power_w'" "job,cap_w,throughput\nj,1,2\n"
bad nonnum "nonnum.csv:3: column 'throughput': 'fast' is not a finite number" \
    "job,cap_w,power_w,throughput\nj,400,390,1\nj,300,290,fast\n"
bad negative "negative.csv:2: column 'power_w': '-390' is negative" \
    "job,cap_w,power_w,throughput\nj,400,-390,1\nj,300,290,1\n"
bad onecap "onecap.csv:2: job 'j' is measured at only one cap" \
    "job,cap_w,power_w,throughput\nj,400,390,1\nj,400,380,1\n"
bad nan "nan.csv:3: column 'power_w': 'NaN' is not a finite number" \
    "job,cap_w,power_w,throughput\nj,400,390,1\nj,300,NaN,1\n"
"$P" pfi "$T/nonexistent.csv" > "$T/out" 2> "$T/err"; [ $? -eq 2 ] || fail "missing file exit"
grep -q 'nonexistent.csv' "$T/err" || fail "missing file message"
"$P" pfi --range 7 tests/data/sweep_basic.csv > /dev/null 2>&1; [ $? -eq 2 ] || fail "--range 7"
"$P" pfi --bogus > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option"

# The real Emerald sweep, read as it is with --columns.
E=${SHARED_DATA:-../shared/data}/emerald-demo/data/dvfs_sweep.csv
if [ -f "$E" ]; then
    "$P" pfi --json --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' "$E" \
        > "$T/em" || fail "emerald exit"
    grep -q '"pt_mpt_13b_sm"' "$T/em" || fail "emerald job missing"
fi
echo ok
