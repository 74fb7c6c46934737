#!/bin/sh
# pflex pfi end to end: every metric, the grid, the drops, the outputs,
# the Emerald file through --columns, and bad usage or input that must
# exit 2 naming what is wrong with nothing on stdout.
set -u
P=${PFLEX:-build/pflex}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$P" pfi --help > "$T/help" || fail "--help exit"
grep -q 'usage: pflex pfi' "$T/help" || fail "--help usage"
grep -q '^EXAMPLES' "$T/help" || fail "--help has no EXAMPLES"
"$P" pfi tests/data/sweep_basic.csv > "$T/table" || fail "table exit"
grep -q '^alpha ' "$T/table" || fail "table has no alpha"
grep -q '^metric: ratio' "$T/table" || fail "table does not name the metric"
grep -q '^grid: every measured cap' "$T/table" || fail "table does not name the grid"
grep -q '> 1 inelastic' "$T/table" || fail "table does not explain the value range"
grep -q '1.10-2.67' "$T/table" || fail "table does not give the study's range"
# alpha: x/L = (.1077/.02 + .2308/.06 + .3846/.18)/3 = 3.789; beta's floors hold to x_max: bounds
grep -q '^alpha .* 3\.789 ' "$T/table" || fail "alpha's ratio PFI: $(grep '^alpha' "$T/table")"
grep -q '^beta .*≥0\.4286' "$T/table" || fail "beta's shed3 is not shown as a bound"
"$P" pfi --json tests/data/sweep_basic.csv > "$T/json" || fail "json exit"
for k in '"metric": "ratio"' '"grid": null' '"range": null' '"jobs"' '"job"' '"gpus"' \
         '"baseline_power_w"' '"baseline_throughput"' '"pfi"' '"points_used"' '"points_dropped"' \
         '"range_used"' '"shed"' '"flex1"' '"flex2"' '"flex3"' '"shed_lower_bound"' '"dropped"'; do
    grep -q "$k" "$T/json" || fail "json lacks $k"
done
"$P" pfi --csv tests/data/sweep_basic.csv > "$T/csv" || fail "csv exit"
head -1 "$T/csv" | grep -qx 'job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w,points_used,points_dropped,shed_flex1,shed_flex2,shed_flex3' || fail "csv header"
grep -q '^alpha,8,650,1000,3.78' "$T/csv" || fail "csv alpha row: $(grep ^alpha "$T/csv")"
grep -q '^alpha,.*,ratio,400/500/600/700,,0.75,,700,3,0,' "$T/csv" || fail "csv alpha's metric, grid, floor, cap"
# stdin
"$P" pfi --csv < tests/data/sweep_basic.csv | cmp -s - "$T/csv" || fail "stdin differs"

# Every metric; the grid; drops with their reasons.
for m in ratio area elasticity loss-area; do
    "$P" pfi --metric $m tests/data/sweep_basic.csv > "$T/m" || fail "--metric $m exit"
    grep -q "^metric: $m" "$T/m" || fail "--metric $m not named"
    "$P" pfi --metric $m --csv tests/data/sweep_basic.csv | grep -q "^beta,1,350,200,[0-9.-]*,$m," \
        || fail "--metric $m csv"
done
"$P" pfi --metric loss-area --range 0.2 --json tests/data/sweep_basic.csv > "$T/la" || fail "loss-area json"
grep -q '"range": 0.2' "$T/la" || fail "loss-area json range"
grep -q '"range_used": 0.2' "$T/la" || fail "loss-area json range_used"
"$P" pfi --all-metrics tests/data/sweep_basic.csv > "$T/all" || fail "--all-metrics exit"
head -8 "$T/all" | grep -q 'elasticity' || fail "--all-metrics legend"
grep -q '^job .*ratio .*area .*elasticity .*loss-area' "$T/all" || fail "--all-metrics header"
"$P" pfi --all-metrics --json tests/data/sweep_basic.csv > "$T/allj" || fail "--all-metrics json"
for k in '"pfi_metrics"' '"ratio"' '"area"' '"elasticity"' '"loss-area"' '"alpha"' '"r2"'; do
    grep -q "$k" "$T/allj" || fail "--all-metrics json lacks $k"
done
"$P" pfi --all-metrics --csv tests/data/sweep_basic.csv | head -1 | grep -q ',pfi_ratio,pfi_area,pfi_elasticity,pfi_loss_area$' \
    || fail "--all-metrics csv columns"
"$P" pfi --grid 400,600 --csv tests/data/sweep_basic.csv 2> "$T/err" | grep -q '^alpha,.*,400/600/700,' \
    || fail "--grid csv: $(cat "$T/err")"
"$P" pfi --grid 400,600 tests/data/sweep_basic.csv > "$T/g" || fail "--grid table"
grep -q '^grid: 400/600 W' "$T/g" || fail "--grid not named"
grep -q '^  grid caps not measured: 600 W' "$T/g" || fail "beta's missing 600 W cap not said"
"$P" pfi --grid 400,600 --json tests/data/sweep_basic.csv | grep -q '"grid_missing"' || fail "json grid_missing"
printf 'job,cap_w,power_w,throughput\nj,400,400,100\nj,390,399,99\nj,300,300,99.8\nj,200,210,80\n' > "$T/drops.csv"
"$P" pfi "$T/drops.csv" > "$T/d" || fail "drops exit"
grep -q '^j .* 1 *2 ' "$T/d" || fail "drops: used 1, dropped 2: $(grep '^j ' "$T/d")"
grep -q '390.0 W not binding (x 0.002500 < 0.01)' "$T/d" || fail "not-binding reason"
grep -q '300.0 W loss within noise (L 0.002000 < 0.005)' "$T/d" || fail "noise reason"
"$P" pfi --json "$T/drops.csv" | grep -q '"reason": "noise"' || fail "json drop reason"
"$P" pfi --grid 390 "$T/drops.csv" > "$T/d1" || fail "grid of a non-binding cap exit"
grep -q 'no PFI: no cap binds' "$T/d1" || fail "no-PFI reason: $(cat "$T/d1")"
"$P" pfi --grid 390 --json "$T/drops.csv" | grep -q '"pfi": null' || fail "no-PFI json null"

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
"$P" pfi --metric loss-area --range 7 tests/data/sweep_basic.csv > /dev/null 2>&1; [ $? -eq 2 ] || fail "--range 7"
usage() { # expected message part, args...
    want=$1; shift
    "$P" pfi "$@" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "pfi $*: exit $rc, want 2"
    [ -s "$T/out" ] && fail "pfi $*: wrote to stdout"
    grep -qF -e "$want" "$T/err" || fail "pfi $*: stderr '$(cat "$T/err")' lacks '$want'"
}
usage "unknown option '--bogus'" --bogus tests/data/sweep_basic.csv
usage "unknown option '-x'" -x tests/data/sweep_basic.csv
usage "--metric needs a value" tests/data/sweep_basic.csv --metric
usage "'fast' is not a metric (ratio, area, elasticity, loss-area)" --metric fast tests/data/sweep_basic.csv
usage "--grid: grid item 2 is empty" --grid 200, tests/data/sweep_basic.csv
usage "--grid: grid item 1 'abc' is not a cap in watts" --grid abc tests/data/sweep_basic.csv
usage "--grid: grid cap 500 W is given twice" --grid 500,500 tests/data/sweep_basic.csv
usage "--grid: cap 450 W was measured for no job (job 'alpha' has 400/500/600/700 W)" \
    --grid 400,450 tests/data/sweep_basic.csv
usage "--range is the loss-area metric's" --range 0.2 tests/data/sweep_basic.csv
usage "--csv and --json exclude each other" --csv --json tests/data/sweep_basic.csv

# The real Emerald sweep, read as it is with --columns.
E=${SHARED_DATA:-../shared/data}/emerald-demo/data/dvfs_sweep.csv
if [ -f "$E" ]; then
    C='job=Workload,cap_w=GPU power cap,power_w=power per GPU'
    "$P" pfi --json --columns "$C" "$E" > "$T/em" || fail "emerald exit"
    grep -q '"pt_mpt_13b_sm"' "$T/em" || fail "emerald job missing"
    "$P" pfi --all-metrics --columns "$C" "$E" > "$T/ema" || fail "emerald --all-metrics"
    # the Llama fine-tuning far less elastic than MPT pretraining, by ratio PFI
    awk '$1 == "ft_llama_8b_dolly" {a = $6} $1 == "pt_mpt_13b_sm" {b = $6}
         END {exit !(a > 2 && b > 1 && b < a)}' "$T/ema" || fail "emerald ratio PFI: $(cat "$T/ema")"
    "$P" pfi --grid 100,200,300 --csv --columns "$C" "$E" | grep -q '^ft_llama_8b_dolly,1,.*,ratio,100/200/300/400,' \
        || fail "emerald grid"
fi
echo ok
