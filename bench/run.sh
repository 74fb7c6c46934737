#!/bin/sh
# make bench: allocation at scale, and one control period of the controller.  Generates seeded sweeps, then prints
# read-only vs read+plan times and their ratio, and planning alone on
# in-memory problems, for DVFS-shaped (convex) curves and for the same
# with measurement noise (non-convex: optimal repairs).  One core;
# medians.  Nothing here asserts a time.
set -e
BUILD=${BUILD:-build}
B=$BUILD/bench/alloc_bench
D=$BUILD/bench/data
mkdir -p "$D"
for n in 1000 1000000; do
    f="$D/sweep-$n-8.csv"
    [ -f "$f" ] || "$B" gen $n 8 20260502 "$f"
done
noisy="$D/noisy-1000000-8.csv"
[ -f "$noisy" ] || "$B" gen 1000000 8 20260503 "$noisy" 0.1
echo "(times: CPU seconds of the process, user + system, medians)"
echo "== planning alone, no I/O =="
"$B" mem 1000 8 501
"$B" mem 1000000 8 5
"$B" mem 1000000 8 5 0.1
echo
echo "== reading the sweep vs reading + planning optimally =="
"$B" file "$D/sweep-1000-8.csv" 51
"$B" file "$D/sweep-1000000-8.csv" 5
"$B" file "$noisy" 5
echo
echo "== pflex allocate --policy optimal beside clp (COIN-OR) on the same LP: whole process, CPU s, medians of 3 =="
BUILD=$BUILD sh bench/alloc_vs_clp.sh || echo "  (clp comparison failed)"
echo
echo "== the whole command: pflex allocate, 1,000,000 jobs, output to /dev/null =="
for fmt in csv json; do
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "  --$fmt: %e s wall, %U s user, %S s system, %M KiB peak" \
            "$BUILD/pflex" allocate "$D/sweep-1000000-8.csv" --reduce 0.3 --$fmt > /dev/null
    else
        t0=$(date +%s.%N)
        "$BUILD/pflex" allocate "$D/sweep-1000000-8.csv" --reduce 0.3 --$fmt > /dev/null
        echo "  --$fmt: $(echo "$(date +%s.%N) - $t0" | bc) s wall"
    fi
done
echo
echo "== reading one job's sweep: rows vs time (about x2 per doubling: not quadratic) =="
"$BUILD/bench/sweep_read_bench" 40000 80000 160000 1000000

# == pflex agent on loopback: /metrics and PUT /v1/caps ==
echo
echo "== pflex agent (sim backend, 8 GPUs, rate limits off), one client on loopback =="
A=$(mktemp -d)
printf 'bench-token-0123456789abcdef\n' >"$A/token"; chmod 600 "$A/token"
"$BUILD/pflex" agent --backend sim --gpus 8 --listen 127.0.0.1:0 --port-file "$A/port" \
    --token-file "$A/token" --state-dir "$A/run" --read-rate 0 --write-rate 0 2>"$A/log" &
apid=$!
i=0; until [ -s "$A/port" ] || [ $i -ge 500 ]; do sleep 0.01; i=$((i + 1)); done
"$BUILD/bench/agent_bench" "http://127.0.0.1:$(cat "$A/port")" "$A/token" 2000 || echo "  (agent benchmark failed)"
echo "== the controller reading that agent's GET /v1/status (caps and a job on it) =="
curl -s -m 5 -X PUT -H "Authorization: Bearer $(cat "$A/token")" \
    -d '{"lease_s":60,"caps":[{"gpu":0,"cap_w":500,"fallback_w":400,"fallback_until":1900000000}]}' \
    "http://127.0.0.1:$(cat "$A/port")/v1/caps" >/dev/null
curl -s -m 5 -X POST -d '{"tokens": 1000}' "http://127.0.0.1:$(cat "$A/port")/v1/jobs/j1/progress" >/dev/null
curl -s -m 5 "http://127.0.0.1:$(cat "$A/port")/v1/status" > "$A/status.json" &&
    "$BUILD/bench/controller_bench" parse "$A/status.json" || echo "  (status read benchmark failed)"
kill -TERM $apid; wait $apid; rm -rf "$A"
echo "== pflex agent beside nginx serving the same bytes: requests/s over keep-alive (bench/http_load.c) =="
BUILD=$BUILD sh bench/agent_vs_nginx.sh 3 1.5
echo "== the controller's planning step (safeplan), one control period =="
"$BUILD/bench/safeplan_bench" 8000 8 21
"$BUILD/bench/safeplan_bench" 100000 8 11

# ---- telemetry (bench/telemetry_bench.c) ----
echo
echo "== readers: pflex beside wc -l (the floor), promtool and a Python loop; CPU s, medians of 3 alternating =="
TB=$BUILD/bench/telemetry_bench
"$TB" readers "$D" 3
"$BUILD/bench/sweep_read_bench" peers "$D" 3
echo "== the same 1M-line readers against wc -l alone, pair by pair (no Python between: memory the last pair freed is still warm) =="
"$TB" pairs "$D/smi-1000000.csv" 5
"$BUILD/bench/sweep_read_bench" pairs "$D/sweep-1000000.csv" 5
"$BUILD/bench/alloc_bench" jobs "$D" 1000000 3
echo "== the extended study through OpenBLAS beside GSL's reference CBLAS (the same objects, relinked) =="
BUILD=$BUILD sh bench/blas_study.sh || echo "  (extended study comparison failed)"
echo "== telemetry: training on 10,000 jobs, predicting 100,000 =="
"$TB" model 10000 100000 3
echo
echo "== the controller: one control period, 1,000 and 12,500 nodes x 8 GPUs, simulated agents in process =="
echo "   (leases of 12 periods: each node renewed every 4th period, staggered, and sent at once when its caps change;"
echo "    HTTP threads: the controller's default, one per 1,000 agents up to 4 and the CPUs)"
echo "   load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
CB=$D/controller-bench.txt
: > "$CB"
cbench() { "$BUILD/bench/controller_bench" "$@" | tee -a "$CB" | grep -v '^  = '; }
echo "-- table: every node answering from one simulated curve, its status written once per change (the controller's own work)"
cbench 1000 12 64 0 0 table
cbench 12500 12 64 0 0 table
cbench 12500 8 64 0 1 table
echo "-- sim: every answer runs the calibrated simulator for its node (the agents' side on the same two cores)"
cbench 1000 12 64 0 0 sim
cbench 12500 4 64 0 0 sim
echo "-- growth of the period per 10x nodes, 1,000 to 12,500 (10^b, b the slope of log time on log nodes; 10 is linear)"
for mode in table sim; do
    awk -v m=$mode '$1 == "=" && $5 == m && $7 == 0 { t[$3] = $9; c[$3] = $11 }
        END { if (t[1000] > 0 && t[12500] > 0)
                  printf "  %s: %.3f s at 1,000 nodes, %.3f s at 12,500: x%.1f per 10x nodes (CPU %.3f s, %.3f s: x%.1f)\n", m,
                         t[1000], t[12500], exp(log(t[12500] / t[1000]) / log(12.5) * log(10)),
                         c[1000], c[12500], exp(log(c[12500] / c[1000]) / log(12.5) * log(10)) }' "$CB"
done
echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo "== the controller reading a site through Prometheus (--prometheus): one period's two answers, 12,500 nodes x 8 GPUs =="
"$BUILD/bench/prom_read_bench" 12500 8 5 jansson
echo "== the same, each agent answering 2 ms late (as from other hosts): 64 requests at once, then one =="
"$BUILD/bench/controller_bench" 1000 12 64 2
"$BUILD/bench/controller_bench" 1000 3 1 2

# ---- pflex simulate (src/lib/site/simulate.c) ----
echo
echo "== pflex simulate: a simulated site through a day, cost against GPUs and periods =="
echo "  (offline policies: equal, eq2-measured, tpw, oracle; then the online learner alone)"
"$BUILD/pflex" sweep --job llama-8b-pretrain-h200 --repeats 1 > "$D/sim-sweep.csv"
for j in emerald-pt-mpt-7b emerald-ft-llama-8b-p3; do
    "$BUILD/pflex" sweep --job $j --repeats 1 | tail -n +2 >> "$D/sim-sweep.csv" 2>/dev/null || true
done
simrun() {
    label=$1; shift
    t0=$(date +%s.%N)
    "$BUILD/pflex" simulate "$D/sim-sweep.csv" --start @1700000000 \
        --target 75%,start=@1700020000,for=4h,ramp=15m --mean-job 6h --floor 0.5 --job-gpus 8:64:8 \
        "$@" --json > "$D/sim.json"
    t1=$(date +%s.%N)
    cpu=$(jq '[.policies[].cpu_s] | add' "$D/sim.json" 2>/dev/null)
    echo "  $label: $(echo "$t1 - $t0" | bc) s wall, ${cpu:-?} s CPU over the policies"
}
for g in 1000 10000 100000; do
    simrun "$g GPUs, 24 h at 1 s (86,400 periods), offline" --gpus $g --duration 24h \
        --policies equal,eq2-measured,tpw,oracle
done
for d in 6h 24h; do
    simrun "10000 GPUs, $d at 1 s, offline" --gpus 10000 --duration $d --policies equal,eq2-measured,tpw,oracle
done
# (learning between events asked for, unbudgeted: the controller's most
# work a period, as measured before it became an opt-in)
for g in 1000 10000; do
    simrun "$g GPUs, 1 h at 1 s (3,600 periods), online-cold" --gpus $g --duration 1h --policies online-cold \
        --learn-between-events --learn-budget 100%
done
# the scale target (docs/simulate.md): 10,000 GPUs through a day at 1 s,
# the controller's own period every second, under 60 s
for d in 6h 24h; do
    simrun "10000 GPUs, $d at 1 s, online-cold" --gpus 10000 --duration $d --policies online-cold \
        --learn-between-events --learn-budget 100%
done
