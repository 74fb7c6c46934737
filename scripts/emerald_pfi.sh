#!/bin/sh
# emerald_pfi.sh — predicted ratio PFIs of the field demonstration's
# workloads, the way `pflex predict` makes them, for `pflex simulate --pfi`
# (eq2-predicted, and online-warm's prior):
#
#   sh scripts/emerald_pfi.sh OUT.csv [SEED]
#
# The field data holds no telemetry of these jobs (dvfs_sweep.csv: workload,
# cap, throughput, power), and `pflex predict` reads the telemetry of a
# job's uncapped run.  So the telemetry here is the simulator's: each
# workload's preset (docs/sim-model.md, calibrated on these very sweeps)
# run at 400 and 350 W; the model is `pflex train` on the study fleet's
# sweeps (`pflex study`, H200 and H100 jobs, none of these).  Rows are named
# after the sweep's workloads (dvfs_sweep.csv), as `pflex simulate --pfi`
# looks them up; one preset stands for the workloads of the same job
# (infer_llama_8b*, pt_mpt_13b_*).  Written atomically.
set -eu
out=${1:?usage: emerald_pfi.sh OUT.csv [SEED]}
seed=${2:-1}
P=${PFLEX:-build/pflex}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$P" study --out "$tmp/study" --seed "$seed" --no-charts > /dev/null
"$P" train -o "$tmp/model.json" "$tmp/study/sweeps.csv" > /dev/null
for j in emerald-infer-llama-8b emerald-ft-llama-8b-p3 emerald-ft-llama-8b-dolly \
         emerald-pt-mpt-7b emerald-pt-mpt-13b; do
    "$P" sweep --job "$j" --caps 400,350 --repeats 3 --seed "$seed" > "$tmp/sweep-$j.csv"
done
"$P" predict --model "$tmp/model.json" "$tmp"/sweep-*.csv > "$tmp/pfi.csv"
awk -F, 'BEGIN { OFS = "," }
    NR == 1 { print; next }
    { n = split(names[$1], w, " ") }
    n == 0 { print "emerald_pfi.sh: unexpected job " $1 > "/dev/stderr"; exit 2 }
    { for (i = 1; i <= n; i++) { $1 = w[i]; print } }
    BEGIN {
        names["emerald-infer-llama-8b"] = "infer_llama_8b infer_llama_8b_48g infer_llama_8b_32g"
        names["emerald-ft-llama-8b-p3"] = "ft_llama_8b_p3"
        names["emerald-ft-llama-8b-dolly"] = "ft_llama_8b_dolly"
        names["emerald-pt-mpt-7b"] = "pt_mpt_7b_fast"
        names["emerald-pt-mpt-13b"] = "pt_mpt_13b_sm pt_mpt_13b_lg"
    }' "$tmp/pfi.csv" > "$tmp/out.csv"
mv "$tmp/out.csv" "$out.tmp.$$"
mv "$out.tmp.$$" "$out"
