#!/bin/sh
# acceptance.sh — online-cold against the oracle and equal cuts on the
# fixture fleets, the field demonstration with its tiers and its days:
# default settings (no learning between events), a 2 h run whose second
# hour is the event, one row per fixture, cut and seed:
#
#   PFLEX=build/pflex SHARED_DATA=DIR sh bench/acceptance.sh [CUTS] [SEEDS]
#   FIXTURES="emerald-noisy emerald-inbound" sh bench/acceptance.sh "10 30" "1 2"
#
# CUTS are % of the site's baseline (default "10 20 30"), SEEDS the seeds
# of the fixtures and the run alike (default "1 2 3").  FIXTURES names the
# files of scripts/sweep_fixtures.sh and "demo" (the field demonstration's
# curves with examples/emerald-event/jobs.csv); default all of those but
# tight and mixed-bad (infeasible cuts; a copy of emerald-noisy).  Columns:
# online-cold's progress lost over the event against the oracle and
# against equal cuts (% of the site's uncapped progress over the event;
# the acceptance: vs_oracle <= 0.5, vs_equal <= 0), its periods above a
# feasible limit and floor breaches (both must be 0), then equal's loss
# against the oracle (the whole gap) and the oracle's own loss against
# the uncapped site.  The last line counts the runs that meet all four.
set -eu
P=${PFLEX:-build/pflex}
D=${PFLEX_SHARED_DATA:-${SHARED_DATA:-../shared/data}}
CUTS=${1:-"10 20 30"}
SEEDS=${2:-"1 2 3"}
FIXTURES=${FIXTURES:-"demo emerald-noisy emerald-inbound h200-loops"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
command -v jq > /dev/null || { echo "acceptance.sh: jq is not installed" >&2; exit 77; }
E=$D/emerald-demo/data/dvfs_sweep.csv
[ -f "$E" ] || { echo "acceptance.sh: no $E (set SHARED_DATA)" >&2; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf '%-16s %4s %4s %9s %9s %6s %7s %9s %9s\n' fixture cut seed vs_oracle vs_equal above floors equal_gap oracle_lost
for seed in $SEEDS; do
    mkdir -p "$T/$seed"
    sh "$HERE/scripts/sweep_fixtures.sh" "$T/$seed" "$seed" "$D"
done
for fx in $FIXTURES; do
for cut in $CUTS; do
for seed in $SEEDS; do
    x=$((100 - cut))
    if [ "$fx" = demo ]; then
        set -- "$E" --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \
            --jobs "$HERE/examples/emerald-event/jobs.csv"
    else
        set -- "$T/$seed/$fx.csv"
    fi
    "$P" simulate "$@" --duration 2h --start @1700000000 \
        --target "$x%,start=+1h,for=1h" --seed "$seed" \
        --policies equal,online-cold,oracle --json 2> /dev/null |
    jq -r --arg f "$fx" --arg c "$cut" --arg s "$seed" '
        def r: if . == null then "-" else (. * 1000 | round / 1000 | tostring) end;
        .event_progress_s as $ev | .policies as $p | $p["online-cold"] as $o |
        [$f, $c, $s, ($o.lost_vs_oracle_pct_of_site | r), ($o.lost_vs_equal_pct_of_site | r),
         $o.periods_above_feasible, $o.floor_breaches,
         ($p.equal.lost_vs_oracle_pct_of_site | r),
         (if $ev > 0 then ($p.oracle.lost_event_s / $ev * 100 | r) else "-" end)] | @tsv'
done
done
done | awk -F'\t' '
    { printf "%-16s %4s %4s %9s %9s %6s %7s %9s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9
      n++; if ($4 != "-" && $4 + 0 <= 0.5 && $5 + 0 <= 0 && $6 == 0 && $7 == 0) ok++ }
    END { printf "met: %d of %d runs\n", ok, n }'
