#!/bin/sh
# The May 2025 Emerald AI field demonstration replayed (examples/emerald-event):
# six jobs on 256 A100 GPUs, a 25% cut, planned from the measured sweep.
# Checks the plan is feasible, within the budget, and keeps every floor.
set -u
P=${PFLEX:-build/pflex}
E=${SHARED_DATA:-../shared/data}/emerald-demo/data/dvfs_sweep.csv
if [ ! -f "$E" ]; then
    echo "skip: no Emerald data at $E (set SHARED_DATA)"
    exit 77
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
COLS='job=Workload,cap_w=GPU power cap,power_w=power per GPU'
J=examples/emerald-event/jobs.csv

for pol in optimal pfi equal; do
    "$P" allocate "$E" --columns "$COLS" --jobs "$J" --reduce 0.25 --objective progress \
        --policy $pol --csv > "$T/$pol.csv" || fail "$pol exit $?"
    [ "$(wc -l < "$T/$pol.csv")" -eq 7 ] || fail "$pol: want 6 jobs"
    # the CSV holds 10 digits: the budget within that; the JSON's totals exactly
    "$P" allocate "$E" --columns "$COLS" --jobs "$J" --reduce 0.25 --objective progress \
        --policy $pol --json > "$T/$pol.json" || fail "$pol json exit $?"
    awk '$1 == "\"budget_w\":" { gsub(/,/, "", $2); b = $2 }
         $1 == "\"power_w\":" && !p { gsub(/,/, "", $2); p = $2 }
         END { exit !(p <= b) }' "$T/$pol.json" || fail "$pol: power over budget"
    awk -F, 'NR > 1 { g += $2; base += $2 * $3; pw += $2 * $4 }
             END { if (g != 256) { print "gpus " g; exit 1 }
                   if (pw > 0.75 * base * (1 + 1e-9)) { print "power " pw " of " base; exit 1 } }' \
        "$T/$pol.csv" || fail "$pol: GPUs or budget"
done
# optimal keeps every floor on the measured curves
awk -F, 'NR > 1 && $8 < $9 - 1e-9 { print $1 " at " $8 " under floor " $9; bad = 1 }
         END { exit bad }' "$T/optimal.csv" || fail "optimal floors"
"$P" allocate "$E" --columns "$COLS" --jobs "$J" --reduce 0.25 --objective progress --json \
    > "$T/opt.json" || fail "json exit"
grep -q '"feasible": true' "$T/opt.json" || fail "not feasible"
"$P" evaluate "$E" --columns "$COLS" --jobs "$J" --reduce 0.25 --objective progress --json \
    > "$T/ev.json" || fail "evaluate exit"
awk '/"optimal"/ { o = 1 } o && /"sla_violations"/ { gsub(/,/, "", $2); exit $2 != 0 }' \
    "$T/ev.json" || fail "optimal SLA violations"
echo ok
