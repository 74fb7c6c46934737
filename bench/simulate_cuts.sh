#!/bin/sh
# The online policies against equal cuts and the oracle on the field
# demonstration's six jobs and A100 curves (examples/emerald-event/jobs.csv
# on emerald-demo/data/dvfs_sweep.csv), one step of the limit per cut: an
# hour uncapped (the learner's baseline, and its probes between events),
# then an hour at 1 - CUT of the site's baseline.  Prints one row per cut
# and policy: the share of the equal-to-oracle gap recovered over the
# event and period by period from 10 periods after the step (mean, least),
# the limited periods under equal cuts, floor breaches, periods over the
# limit after the ramp, probes.
#   PFLEX=build/pflex SHARED_DATA=../shared/data sh bench/simulate_cuts.sh [CUTS] [SEED]
set -eu
P=${PFLEX:-build/pflex}
D=${PFLEX_SHARED_DATA:-${SHARED_DATA:-../shared/data}}
CUTS=${1:-"0.10 0.20 0.30 0.40"}
SEED=${2:-1}
S=$D/emerald-demo/data/dvfs_sweep.csv
[ -f "$S" ] || { echo "no $S (set SHARED_DATA)"; exit 77; }
command -v jq > /dev/null || { echo "jq is not installed"; exit 77; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
printf '%-5s %-12s %9s %9s %9s %7s %7s %6s %7s\n' cut policy recovered settled least below= floors above probes
for c in $CUTS; do
    f=$(echo "$c" | awk '{printf "%g%%", 100 * (1 - $1)}')
    "$P" simulate "$S" --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \
        --jobs "$HERE/examples/emerald-event/jobs.csv" --start @1700000000 --duration 2h \
        --target "$f,start=@1700003600,for=1h" --seed "$SEED" \
        --policies equal,online-cold,online-warm,oracle --json |
    jq -r --arg c "$c" '.policies | to_entries[] | [$c, .key,
        (if .value.gap_recovered == null then "-" else (.value.gap_recovered * 100 | tostring | .[0:6]) end),
        (if .value.settled_mean == null then "-" else (.value.settled_mean * 100 | tostring | .[0:6]) end),
        (if .value.settled_min == null then "-" else (.value.settled_min * 100 | tostring | .[0:6]) end),
        .value.below_equal, "\(.value.floor_breaches)/\(.value.floor_periods)", .value.periods_above,
        .value.probes] | @tsv' |
    awk -F'\t' '{printf "%-5s %-12s %8s%% %8s%% %8s%% %7s %7s %6s %7s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
done
