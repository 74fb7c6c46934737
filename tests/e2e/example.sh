#!/bin/sh
# examples/plan_cut.c, built on libpflex and its public headers alone, reads
# a sweep, measures each job's PFI and plans a site cut with floors: every
# number it prints is the one `pflex pfi --csv` and `pflex allocate --csv`
# give on the same sweep, cut and floor.
set -u
P=${PFLEX:-build/pflex}
B=${PFLEX_BUILD:-build}
X="$B/examples/plan_cut"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$X" ] || fail "$X was not built (make test-bins builds it)"
S=examples/plan_cut.csv

# Numbers agree to 1e-9 relative (both sides print 10 significant digits).
same() {
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a;
        exit !(d <= 1e-9 * (m > 1 ? m : 1)) }'
}

check() {   # cut, floor ("" for none)
    cut=$1; fl=$2
    "$X" "$S" "$cut" $fl > "$T/ex" || fail "plan_cut $cut $fl: exit $?"
    "$P" pfi --csv "$S" > "$T/pfi" || fail "pflex pfi"
    "$P" allocate "$S" --reduce "$cut" ${fl:+--floor "$fl"} --csv > "$T/plan" \
        || fail "pflex allocate --reduce $cut $fl"
    njobs=$(($(wc -l < "$T/pfi") - 1))
    [ "$njobs" -ge 3 ] || fail "pflex pfi gave $njobs jobs"
    [ "$(grep -c '^pfi ' "$T/ex")" -eq "$njobs" ] || fail "plan_cut's pfi lines: $(cat "$T/ex")"
    [ "$(grep -c '^plan ' "$T/ex")" -eq "$njobs" ] || fail "plan_cut's plan lines: $(cat "$T/ex")"
    # pflex pfi --csv: job,gpus,power_w,throughput,pfi,...,points_used (12th)
    tail -n +2 "$T/pfi" | while IFS=, read -r job _ _ _ pfi _ _ _ _ _ _ used _; do
        line=$(grep "^pfi $job " "$T/ex") || fail "plan_cut has no PFI for $job"
        set -- $line
        same "$3" "$pfi" || fail "$job: PFI $3 from the library, $pfi from pflex pfi"
        [ "$4" = "$used" ] || fail "$job: points used $4 and $used"
    done || exit 1
    # pflex allocate --csv: job,gpus,baseline_power_w,power_w,cap_w,reduction,
    # throughput,fraction,floor,measured_fraction,...
    tail -n +2 "$T/plan" | while IFS=, read -r job gpus _ pw cap x _ _ _ mf _; do
        line=$(grep "^plan $job " "$T/ex") || fail "plan_cut has no plan for $job"
        set -- $line
        [ "$4" = "$gpus" ] || fail "$job: gpus $4 and $gpus"
        same "$6" "$pw" || fail "$job: power $6 W and $pw W"
        same "$8" "$cap" || fail "$job: cap $8 W and $cap W"
        same "${10}" "$x" || fail "$job: reduction ${10} and $x"
        same "${12}" "$mf" || fail "$job: fraction ${12} and $mf"
    done || exit 1
    grep -q '^total .* infeasible' "$T/ex" && fail "plan_cut $cut $fl: infeasible"
    return 0
}

check 0.2 0.8
check 0.35 ""
check 0.1 0.95

# the plan cuts somebody and keeps the budget
awk '$1 == "total" { exit !($3 <= $5 * (1 + 1e-9) && $3 < $7) }' "$T/ex" \
    || fail "the total line: $(grep '^total' "$T/ex")"
# bad usage: exit 2, a usage line
"$X" > /dev/null 2> "$T/err"; [ $? -eq 2 ] || fail "no arguments: not exit 2"
grep -q usage "$T/err" || fail "no usage line"
"$X" "$S" 1.5 > /dev/null 2>&1; [ $? -eq 2 ] || fail "a cut of 1.5: not exit 2"
echo "example: ok"
