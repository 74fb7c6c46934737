#!/bin/sh
# The online policies against equal cuts and the oracle on the field
# demonstration's six jobs and A100 curves (examples/emerald-event/jobs.csv
# on emerald-demo/data/dvfs_sweep.csv), one step of the limit per cut: an
# hour uncapped (the learner's baseline, and its probes between events),
# then an hour at 1 - CUT of the site's baseline.  Prints one row per seed,
# cut and policy: first the progress lost over the event against the
# oracle's and against equal cuts', each a share of the site's uncapped
# progress over the event (vs_equal < 0: better than equal cuts), and the
# whole equal-to-oracle gap the same way (gap); then the share of that gap
# recovered over the event and period by period from 10 periods after the
# step (mean, least; "-" where the gap is 1 % of the site's or less),
# the periods with the limit in force under equal cuts, floor breaches (of
# job-periods with a floor), periods over the limit after the ramp, probes,
# the progress-seconds lost in the hour before the event (what the probes
# cost: GPUs x T/T0 short of uncapped; of 921.6k over the hour), and the
# mean cap under the limit of the first job, the flex1 inference job whose
# floor binds from a 20 % cut (274.3 W on its curve), and the job-periods
# under a floor with no limit in force (free: the probes between events).
# LEARN: the online policies' learning between events (default
# "--learn-between-events --learn-budget 100%", the probes of the hour
# before the event unbudgeted, as every number measured with this script
# before learning between events became an opt-in; LEARN= none).
# SIM_ARGS adds options to every run (SIM_ARGS="--noise-tput 0 --noise-power 0":
# readings without noise); POLICIES the policies (default
# equal,online-cold,online-warm,oracle; "all" for every one that can run,
# eq2-predicted with PFI=FILE, as scripts/emerald_pfi.sh writes it).
# FLOORS=off drops the jobs' tiers and floors (the study's own protocol, which
# has none: what the learner recovers where no floor's edge must be found);
# SWEEP=FILE and JOBS=FILE run other curves (SWEEP_COLUMNS maps their headers);
# SWEEP=sim-h200 the simulator's H200 curves of six jobs of other shapes
# (the presets of bench/sim_h200_jobs.csv, swept every 50 W from 700 W,
# seed 1), curves none of the learner's constants were chosen on, with
# the same tiers as the field demonstration's jobs; SWEEP=sim-a100 the
# simulator's A100 twins of the field demonstration's own jobs
# (bench/sim_a100_jobs.csv, every 25 W from 400 W, simulator seed 3).
#   PFLEX=build/pflex SHARED_DATA=../shared/data sh bench/simulate_cuts.sh [CUTS] [SEEDS]
#   POLICIES=all PFI=pfi.csv sh bench/simulate_cuts.sh "0.10 0.20 0.30 0.40" 1
#   SWEEP=sim-h200 sh bench/simulate_cuts.sh "0.20 0.30 0.40" "1 2 3"
#   FLOORS=off sh bench/simulate_cuts.sh "0.10 0.20 0.30 0.40" "$(seq -s' ' 1 60)"
set -eu
P=${PFLEX:-build/pflex}
D=${PFLEX_SHARED_DATA:-${SHARED_DATA:-../shared/data}}
CUTS=${1:-"0.10 0.20 0.30 0.40"}
SEEDS=${2:-1}
POLICIES=${POLICIES:-equal,online-cold,online-warm,oracle}
LEARN=${LEARN-"--learn-between-events --learn-budget 100%"}
[ "$POLICIES" = all ] && POLICIES=equal,eq2-measured,eq2-predicted,tpw,online-cold,online-warm,oracle
[ -n "${PFI:-}" ] || POLICIES=$(echo "$POLICIES" | sed 's/,eq2-predicted//')
HERE=$(cd "$(dirname "$0")/.." && pwd)
command -v jq > /dev/null || { echo "jq is not installed"; exit 77; }
J=${JOBS:-$HERE/examples/emerald-event/jobs.csv}
COLS=${SWEEP_COLUMNS:-}
# the sweep of the presets a jobs file names (its curve column): $1 the
# cap step, $2 the simulator's seed
sweep_presets() {
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
    S=$T/sweep.csv
    first=1
    for p in $(grep -v '^#' "$J" | tail -n +2 | cut -d, -f2 | sort -u); do
        if [ $first = 1 ]; then "$P" sweep --job "$p" --repeats 1 --cap-step "$1" --seed "$2" > "$S"; first=0
        else "$P" sweep --job "$p" --repeats 1 --cap-step "$1" --seed "$2" | tail -n +2 >> "$S"; fi
    done
}
case "${SWEEP:-}" in
"")
    S=$D/emerald-demo/data/dvfs_sweep.csv
    [ -f "$S" ] || { echo "no $S (set SHARED_DATA)"; exit 77; }
    COLS='job=Workload,cap_w=GPU power cap,power_w=power per GPU' ;;
sim-h200)
    J=${JOBS:-$HERE/bench/sim_h200_jobs.csv}
    sweep_presets 50 1 ;;
sim-a100)
    J=${JOBS:-$HERE/bench/sim_a100_jobs.csv}
    sweep_presets 25 3 ;;
*)
    S=$SWEEP ;;
esac
R=$(mktemp)
trap 'rm -f "$R" "${F:-}"; [ -z "${T:-}" ] || rm -rf "$T"' EXIT
case "${FLOORS:-on}" in
on) ;;
off)
    # the jobs' first three columns (job, curve, gpus): no tier, no floor
    F=$(mktemp)
    grep -v '^#' "$J" | cut -d, -f1-3 > "$F"
    J=$F ;;
*)
    echo "FLOORS must be on or off"; exit 2 ;;
esac
printf '%-4s %-5s %-12s %9s %9s %7s %9s %9s %9s %7s %9s %6s %7s %8s %7s %5s\n' seed cut policy vs_oracle vs_equal gap \
    recovered settled least below= floors above probes pre_lost job1_w free
for seed in $SEEDS; do
for c in $CUTS; do
    f=$(echo "$c" | awk '{printf "%g%%", 100 * (1 - $1)}')
    "$P" simulate "$S" ${COLS:+--columns "$COLS"} \
        --jobs "$J" --start @1700000000 --duration 2h \
        --target "$f,start=@1700003600,for=1h" --seed "$seed" \
        --policies "$POLICIES" ${PFI:+--pfi "$PFI"} $LEARN ${SIM_ARGS:-} --json |
    jq -r --arg c "$c" --arg s "$seed" '.gap_pct_of_site as $g | .policies | to_entries[] | [$s, $c, .key,
        (if .value.lost_vs_oracle_pct_of_site == null then "-" else (.value.lost_vs_oracle_pct_of_site * 1000 | round / 1000 | tostring) end),
        (if .value.lost_vs_equal_pct_of_site == null then "-" else (.value.lost_vs_equal_pct_of_site * 1000 | round / 1000 | tostring) end),
        (if $g == null then "-" else ($g * 1000 | round / 1000 | tostring) end),
        (if .value.gap_recovered == null then "-" else (.value.gap_recovered * 1000 | round / 10 | tostring) end),
        (if .value.settled_mean == null then "-" else (.value.settled_mean * 1000 | round / 10 | tostring) end),
        (if .value.settled_min == null then "-" else (.value.settled_min * 1000 | round / 10 | tostring) end),
        .value.below_equal, "\(.value.floor_breaches)/\(.value.floor_periods)", .value.periods_above,
        .value.probes, (.value.lost_s - .value.lost_event_s | round), (if .value.job_cap_w == null then "-" else (.value.job_cap_w[0] * 10 | round / 10 | tostring) end),
        .value.floor_breaches_free]
        | @tsv' |
    awk -F'\t' 'function p(v) { return v == "-" ? v : v "%" }
        {printf "%-4s %-5s %-12s %9s %9s %7s %9s %9s %9s %7s %9s %6s %7s %8s %7s %5s\n", $1, $2, $3, p($4), p($5),
         p($6), p($7), p($8), p($9), $10, $11, $12, $13, $14, $15, $16}' | tee -a "$R"
done
done
# the headline: per cut and policy, the means over the seeds
echo
echo "mean over seeds ($SEEDS): progress lost over the event, % of the site's"
awk '{ k = $2 " " $3; if (!(k in n)) o[++m] = k; n[k]++; sub(/%/, "", $4); sub(/%/, "", $5); sub(/%/, "", $6)
       a[k] += $4; b[k] += $5; g[k] += $6 }
     END { printf "%-5s %-12s %9s %9s %7s\n", "cut", "policy", "vs_oracle", "vs_equal", "gap"
           for (i = 1; i <= m; i++) { k = o[i]; split(k, f, " ")
               printf "%-5s %-12s %8.3f%% %8.3f%% %6.3f%%\n", f[1], f[2], a[k] / n[k], b[k] / n[k], g[k] / n[k] } }' "$R"
