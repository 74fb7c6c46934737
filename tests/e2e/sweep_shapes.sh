#!/bin/sh
# Every sweep pflex pfi accepts runs in simulate, evaluate and allocate
# (exit 0, or 3 for a cut the jobs cannot meet; never 2): the repository's
# sweeps under tests/data, and the fixtures scripts/sweep_fixtures.sh makes
# from the shared data (noise that makes power non-monotone in the cap,
# input-bound jobs that never reach their caps, a fleet too tight for the
# cut, a bad job), when it is there.  A bad job is skipped with a warning
# naming the file, line and job; --strict makes it fatal in all four.
set -u
P=${PFLEX:-build/pflex}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
HERE=$(cd "$(dirname "$0")/../.." && pwd)

# every CSV of the repository's test data and examples: those pfi takes
files=$(find "$HERE/tests/data" "$HERE/examples" -name '*.csv' | sort)
D=${PFLEX_SHARED_DATA:-${SHARED_DATA:-}}
if [ -n "$D" ] && sh "$HERE/scripts/sweep_fixtures.sh" "$T/fx" 1 "$D" 2> "$T/fx.err"; then
    files="$files $(ls "$T"/fx/*.csv)"
else
    echo "note: no shared data for scripts/sweep_fixtures.sh: the repository's sweeps only"
fi

SIM="--start @1700000000 --duration 10m --period 5s --target 30%,start=@1700000120,for=5m"
n=0
for f in $files; do
    b=$(basename "$f")
    "$P" pfi "$f" > /dev/null 2>&1 || continue
    n=$((n + 1))
    "$P" simulate "$f" $SIM --json > "$T/sim.json" 2> "$T/err"; rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "$b: simulate exit $rc: $(cat "$T/err")"
    grep -q '"policies"' "$T/sim.json" || fail "$b: simulate wrote no policies"
    for c in evaluate allocate; do
        "$P" $c "$f" --reduce 0.3 --json > "$T/$c.json" 2> "$T/err"; rc=$?
        [ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "$b: $c exit $rc: $(cat "$T/err")"
    done
    # the curves read through the fit say so, raw and fitted points beside
    jq -e '.curve_fit.method | test("isotonic")' "$T/allocate.json" > /dev/null \
        || fail "$b: allocate --json names no curve fit"
done
[ $n -ge 3 ] || fail "only $n sweeps accepted by pfi"
# the fixtures carry the shapes they are made for (else the loop above
# would prove nothing): power pooled by the fit, jobs that never bind
if [ -d "$T/fx" ]; then
    "$P" allocate "$T/fx/emerald-noisy.csv" --reduce 0.2 --json 2> /dev/null \
        | jq -e '[.curve_fit.jobs[] | select(.raw_power_w != .power_w)] | length >= 2' > /dev/null \
        || fail "emerald-noisy.csv: no power pooled by the fit"
    "$P" allocate "$T/fx/emerald-inbound.csv" --reduce 0.2 --json 2> /dev/null \
        | jq -e '[.curve_fit.jobs[] | select(.flat) | .job] | index("inbound-a40") != null' > /dev/null \
        || fail "emerald-inbound.csv: inbound-a40 not flat"
    "$P" allocate "$T/fx/h200-loops.csv" --reduce 0.2 --json 2> /dev/null \
        | jq -e '.curve_fit.jobs[] | select(.job == "d950m_infer") | .flat and .model_min_cap_w == 200' \
        > /dev/null || fail "h200-loops.csv: d950m_infer not flat with its model down to 200 W"
fi

# the hand-written shapes: the bad job skipped in each command, named
S="$HERE/tests/data/sweep_shapes.csv"
for c in "pfi" "allocate --reduce 0.2" "evaluate --reduce 0.2" "simulate $SIM"; do
    "$P" $c "$S" > /dev/null 2> "$T/err" || fail "$c: exit $?: $(cat "$T/err")"
    grep -q "sweep_shapes.csv:15: job 'nobase': baseline throughput at 300 W is not positive; skipped" \
        "$T/err" || fail "$c: the bad job not named: $(cat "$T/err")"
    "$P" $c --strict "$S" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$c --strict: exit $rc, want 2"
    [ -s "$T/out" ] && fail "$c --strict: wrote to stdout"
    grep -q "job 'nobase'" "$T/err" || fail "$c --strict: $(cat "$T/err")"
done
# rows no job can be read from: one cap, a power of nan, an empty
# throughput; skipped with the line, or the reader's error with --strict
printf 'job,cap_w,power_w,throughput\ngood,200,190,80\ngood,300,280,100\nonecap,300,250,90
nanjob,200,nan,80\nnanjob,300,280,100\nempty,200,180,\nempty,300,280,100\n' > "$T/bad.csv"
for c in "pfi" "allocate --reduce 0.1" "evaluate --reduce 0.1" "simulate $SIM"; do
    "$P" $c "$T/bad.csv" > /dev/null 2> "$T/err" || fail "$c bad.csv: exit $?: $(cat "$T/err")"
    grep -q "bad.csv:4: job 'onecap': measured at only one cap (300 W)" "$T/err" || fail "$c: onecap: $(cat "$T/err")"
    grep -q "bad.csv:5: job 'nanjob': line 5: power_w at 200 W" "$T/err" || fail "$c: nanjob: $(cat "$T/err")"
    grep -q "bad.csv:7: job 'empty': line 7: throughput at 200 W" "$T/err" || fail "$c: empty: $(cat "$T/err")"
    "$P" $c --strict "$T/bad.csv" > /dev/null 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$c --strict bad.csv: exit $rc"
    grep -q "bad.csv:5: column 'power_w': 'nan' is not a finite number" "$T/err" || fail "$c --strict: $(cat "$T/err")"
done

# pfi --json lists the skipped job, and only where there is one
"$P" pfi --json "$S" 2> /dev/null | jq -e '.skipped == [{"job": "nobase", "why": "baseline throughput at 300 W is not positive"}]
    and ([.jobs[].job] == ["noisy", "inbound"])' > /dev/null || fail "pfi --json: skipped"
"$P" pfi --json "$HERE/tests/data/sweep_basic.csv" | jq -e 'has("skipped") | not' > /dev/null \
    || fail "pfi --json: skipped where no job was"

# the tables say it in a line; a monotone sweep's say nothing new
for c in "allocate --reduce 0.2" "evaluate --reduce 0.2" "simulate $SIM"; do
    "$P" $c "$S" 2> /dev/null | grep -q '^curve fit: 2 sweep jobs read through isotonic regression .*(1 flat: no cap binds); 1 bad job skipped' \
        || fail "$c: no curve fit line in the table"
    "$P" $c "$HERE/tests/data/sweep_basic.csv" 2> /dev/null | grep -q '^curve fit' \
        && fail "$c: a curve fit line for a monotone sweep"
done

# the fit in the JSON: the noisy job's raw and fitted power; the flat job
"$P" allocate "$S" --reduce 0.2 --json > "$T/a.json" 2> /dev/null
jq -e '.curve_fit.jobs | map(select(.job == "noisy"))[0] | (.raw_power_w | length) == 5
       and .power_w[1] == .power_w[2] and .raw_power_w[1] != .raw_power_w[2]' "$T/a.json" > /dev/null \
    || fail "allocate --json: noisy job's fit: $(jq -c .curve_fit "$T/a.json")"
jq -e '.curve_fit.jobs | map(select(.job == "inbound"))[0] | .flat and .model_min_cap_w == 150' \
    "$T/a.json" > /dev/null || fail "allocate --json: flat job: $(jq -c .curve_fit "$T/a.json")"
jq -e '.skipped == [{"job": "nobase", "why": "baseline throughput at 300 W is not positive"}]' \
    "$T/a.json" > /dev/null || fail "allocate --json: skipped: $(jq -c .skipped "$T/a.json")"
echo "sweep_shapes: ok ($n sweeps)"
