#!/bin/sh
# The outputs a refactoring must keep to the byte: run a fixed set of pflex
# commands (study, simulate days and cut runs, pfi and allocate on sweeps,
# telemetry reads, job files, the simulator's sweeps) into DIR, or, with
# check, into a fresh folder and diff it against DIR.  Commands that need
# the field demonstration's data run only when SHARED_DATA names it; their
# absence is said, not failed.
#   PFLEX=build/pflex SHARED_DATA=../shared/data sh scripts/same_bytes.sh make BASE
#   PFLEX=build/pflex SHARED_DATA=../shared/data sh scripts/same_bytes.sh check BASE
set -u
P=${PFLEX:-build/pflex}
D=${SHARED_DATA:-}
HERE=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] && { [ "$1" = make ] || [ "$1" = check ]; } ||
    { echo "usage: sh scripts/same_bytes.sh make|check DIR" >&2; exit 2; }
MODE=$1
BASE=$2
if [ "$MODE" = make ]; then
    O=$BASE
    rm -rf "$O"
    mkdir -p "$O"
else
    [ -d "$BASE" ] || { echo "no $BASE: make it first" >&2; exit 2; }
    O=$(mktemp -d)
    trap 'rm -rf "$O"' EXIT
fi
# run NAME CMD...: stdout to NAME.out, stderr to NAME.err, the exit status to NAME.rc
run() {
    n=$1
    shift
    "$@" > "$O/$n.out" 2> "$O/$n.err"
    echo $? > "$O/$n.rc"
}
T=$HERE/tests/data
cd "$HERE" || exit 2

# the study (simulated fleet), its four files
run study "$P" study --out "$O/study" --jobs 20 --seed 3
# the models trained on it: cross-validated (leave-one-group-out), the
# study's predictions, a prediction from the model
run train_cv "$P" train --cv -o "$O/model.json" "$O/study/sweeps.csv"
run train_study "$P" train --study "$O/study"
run predict "$P" predict --model "$O/model.json" --pfi-out "$O/pred_pfi.csv" \
    --curves-out "$O/pred_curves.csv" "$O/study/sweeps.csv"
# the simulator's own sweeps and a simulated day on them
run sweep_llama "$P" sweep --job llama-8b-pretrain-h200 --repeats 2 --seed 5
run sweep_mpt "$P" sweep --job emerald-pt-mpt-7b --repeats 1 --cap-step 25 --seed 3
run sim_sweep "$P" simulate "$O/sweep_llama.out" --start @1700000000 --duration 30m \
    --target 80%,start=@1700000600,for=10m --seed 3 --json
run sim_sweep_csv "$P" simulate "$O/sweep_llama.out" --start @1700000000 --duration 30m \
    --target 70%,start=@1700000600,for=10m --seed 4 --csv --every 30
run sim_gpus "$P" simulate "$O/sweep_llama.out" --gpus 2000 --duration 6h --target 80%,start=+1h,for=2h \
    --start @1700000000 --mean-job 2h --seed 9 --json
# pfi and allocate on the test sweeps
for f in sweep_basic sweep_shapes; do
    run "pfi_$f" "$P" pfi --all-metrics --json "$T/$f.csv"
    run "pficsv_$f" "$P" pfi --csv "$T/$f.csv"
    run "alloc_$f" "$P" allocate --json --reduce 15% "$T/$f.csv"
done
# telemetry reads of every fixture
for f in "$T"/telemetry/*; do
    b=$(basename "$f" | tr . _)
    run "tm_$b" "$P" telemetry --csv "$f"
    run "tmj_$b" "$P" telemetry --json "$f"
done
# job files (JSON), Slurm's JSON
for f in "$T"/job_*.json; do
    run "job_$(basename "$f" .json)" "$P" sweep --backend sim --job "$f" --repeats 1 --seed 2
done
run jobs_slurm "$P" jobs --slurm-squeue "$T/slurm/squeue.json" --json

if [ -n "$D" ] && [ -f "$D/emerald-demo/data/dvfs_sweep.csv" ]; then
    S=$D/emerald-demo/data/dvfs_sweep.csv
    C='job=Workload,cap_w=GPU power cap,power_w=power per GPU'
    J=$HERE/examples/emerald-event/jobs.csv
    run pfi_dvfs "$P" pfi --all-metrics --json --columns "$C" "$S"
    run alloc_dvfs "$P" allocate --json --reduce 20% --columns "$C" "$S"
    run alloc_dvfs_jobs "$P" allocate --json --reduce 25% --columns "$C" --jobs "$J" --objective progress "$S"
    for d in srp aps caiso; do
        run "day_$d" "$P" simulate --day "$d" --data "$D" --period 5s --seed 2 --json
    done
    run day_srp_csv "$P" simulate --day srp --data "$D" --period 10s --csv --every 6
    run day_srp_out "$P" simulate --day srp --data "$D" --period 10s --out "$O/srp"
    # cut runs as bench/simulate_cuts.sh makes them, two cuts, one seed
    for c in 80% 60%; do
        run "cut_$c" "$P" simulate "$S" --columns "$C" --jobs "$J" --start @1700000000 --duration 2h \
            --target "$c,start=@1700003600,for=1h" --seed 1 \
            --policies equal,online-cold,online-warm,oracle --learn-between-events --learn-budget 100% --json
    done
    for f in "$D"/h200-uncapped/telemetry/*.csv "$D"/h200-uncapped/telemetry/*.txt; do
        [ -f "$f" ] || continue
        run "tm_h200_$(basename "$f" | tr . _)" "$P" telemetry --csv "$f"
    done
else
    echo "no SHARED_DATA: the field demonstration's runs are left out"
fi
# what --out wrote may hold the folder's own name: a fixed one; and the
# seconds a run took (cpu_s, runtime_s, the study's "N.N s"), which no
# refactoring keeps
for f in $(find "$O" -type f); do
    sed -i -e "s|$O|OUT|g" -e 's/"\(cpu_s\|runtime_s\)": [0-9.e+-]*/"\1": T/' \
        -e 's/, [0-9.]* s$/, T s/' -e 's/; [0-9.]* s\./; T s./' "$f"
    # the text table's last column after a header that ends in cpu_s
    awk '/cpu_s$/ { t = 1; print; next } /^$/ { t = 0 } t { sub(/[0-9.]+$/, "T") } { print }' \
        "$f" > "$f.tmp" && mv "$f.tmp" "$f"
done

if [ "$MODE" = make ]; then
    echo "$(find "$O" -type f | wc -l) files in $O"
    exit 0
fi
if diff -r "$BASE" "$O" > "$O.diff" 2>&1; then
    echo "same bytes: $(find "$O" -type f | wc -l) files"
    rm -f "$O.diff"
    exit 0
fi
echo "DIFFERENT (diff in $O.diff):"
head -40 "$O.diff"
trap - EXIT
exit 1
