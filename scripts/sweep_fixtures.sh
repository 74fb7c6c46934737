#!/bin/sh
# sweep_fixtures.sh — sweeps of the shapes measured sweeps of other GPUs
# have (noise, caps that do not bind, input-bound jobs, bad jobs), made
# from the shared data with documented, seeded perturbations:
#
#   sh scripts/sweep_fixtures.sh OUTDIR [SEED] [DATA]
#
# DATA defaults to $SHARED_DATA; it needs emerald-demo/data/dvfs_sweep.csv
# (the field demonstration's measured curves: 8 workloads, caps 100-400 W)
# and h200-uncapped/measured.csv (five uncapped loops on one H200).  Exit
# 77 with a message when they are absent.  Writes into OUTDIR (created):
#
#   emerald-noisy.csv    every workload measured twice at each cap, power
#                        and throughput times 1 + N(0, 2 %) and 1 + N(0, 1 %)
#                        per row, with two caps added: 375 W, drawing what
#                        400 W drew (it does not bind), and 325 W, drawing
#                        99 % of it (321.75 W, more than most workloads draw
#                        at 350 W): power is no longer monotone in the cap
#   emerald-inbound.csv  the workloads as measured, plus three input-bound
#                        jobs drawing far under every cap (100-400 W): 64 W
#                        falling to 60 W as the cap rises, so that no cap
#                        draws under the baseline's (0.3 % noise), on an A40
#                        (settable from 100 W: no cut below the draw); 160 W
#                        on an A100 (settable from 100 W: modelled below the
#                        draw); and 40-90 W rising with the cap; 2 % noise
#   h200-loops.csv       the five H200 loops at caps 700..350 W: each the
#                        shape of a field workload (T/T0 against P/P0)
#                        scaled to its own uncapped power and tokens/s;
#                        d950m_infer, which draws 251 W uncapped, flat at its
#                        draw above it; 2 % power noise
#   tight.csv            the workloads at caps 300-400 W only: their lowest
#                        caps sum above a 30 % cut of the fleet
#   mixed-bad.csv        emerald-noisy.csv plus a job with no throughput at
#                        its baseline (a bad job: skipped, fatal with --strict)
#
# The noise is a Park-Miller generator seeded by SEED (default 1), the same
# under every awk.  Nothing of the shared data is kept beyond OUTDIR.
set -eu
out=${1:?usage: sweep_fixtures.sh OUTDIR [SEED] [DATA]}
seed=${2:-1}
data=${3:-${SHARED_DATA:-}}
E="$data/emerald-demo/data/dvfs_sweep.csv"
H="$data/h200-uncapped/measured.csv"
if [ -z "$data" ] || [ ! -f "$E" ] || [ ! -f "$H" ]; then
    echo "sweep_fixtures.sh: no shared data (give DATA or set SHARED_DATA)" >&2
    exit 77
fi
mkdir -p "$out"

# rng: Park-Miller (16807 x mod 2^31 - 1, exact in doubles); gauss: the
# sum of 12 uniforms less 6, near enough N(0, 1) for noise
# under: a draw held 1 % under its cap at most (a binding cap holds the
# mean a little under it; noise does not lift it over, which the
# simulator's planners, counting a cap as the watts it allows, would pay
# for in periods over the limit)
RNG='function rnd() { rs = (16807 * rs) % 2147483647; return rs / 2147483647 }
     function gauss(  i, s) { s = 0; for (i = 0; i < 12; i++) s += rnd(); return s - 6 }
     function under(p, c) { return p < 0.99 * c ? p : 0.99 * c }'

awk -F, -v seed="$seed" "$RNG"'
    BEGIN { rs = seed * 7919 + 1; OFS = ","; print "job,gpu,cap_w,power_w,throughput" }
    NR > 1 { for (r = 0; r < 2; r++)
                 print $1, "", $2, under($6 * (1 + 0.02 * gauss()), $2), $3 * (1 + 0.01 * gauss())
             if ($2 == 350)                  # held at 99 % of 325 W: over most 350s
                 for (r = 0; r < 2; r++)
                     print $1, "", 325, under(1e9, 325), $3 * (1 + 0.01 * gauss())
             if ($2 == 400)                  # over the draw: does not bind
                 for (r = 0; r < 2; r++)
                     print $1, "", 375, under($6 * (1 + 0.02 * gauss()), 375),
                           $3 * (1 + 0.01 * gauss()) }' \
    "$E" > "$out/emerald-noisy.csv"

awk -F, -v seed="$seed" "$RNG"'
    BEGIN { rs = seed * 104729 + 3; OFS = ","; print "job,gpu,cap_w,power_w,throughput" }
    NR > 1 { print $1, "", $2, $6, $3 }
    END {
        for (c = 100; c <= 400; c += 50) {
            print "inbound-a40", "A40", c, (64 - 4 * (c - 100) / 300) * (1 + 0.003 * gauss()),
                  12 * (1 + 0.02 * gauss())
            print "inbound-a100", "A100", c, 160 * (1 + 0.02 * gauss()), 30 * (1 + 0.02 * gauss())
            print "inbound-rising", "", c, (40 + 50 * (c - 100) / 300) * (1 + 0.02 * gauss()),
                  20 * (1 + 0.02 * gauss())
        }
    }' "$E" > "$out/emerald-inbound.csv"

# the shapes: per field workload, T/T0 and P/P0 at each cap c/400
awk -F, -v seed="$seed" "$RNG"'
    BEGIN { rs = seed * 15485863 + 5; OFS = ","; print "job,gpu,cap_w,power_w,throughput" }
    FNR == 1 { f++ }
    f == 1 && FNR > 1 { k = $1; c = $2; p[k, c] = $6; t[k, c] = $3; if (c > top[k]) top[k] = c
                        if (!(k in seen)) { seen[k] = 1; order[++nk] = k } }
    f == 2 && /^[^#]/ && $1 != "job" {
        k = order[1 + (nj++ % nk)]
        for (c = 100; c <= top[k]; c += 50) {
            if (!((k, c) in p)) continue
            cap = 700 * c / top[k]
            if (cap < 200) continue      # under the lowest cap an H200 takes
            pw = $3 * p[k, c] / p[k, top[k]]
            tp = $2 * t[k, c] / t[k, top[k]]
            if ($1 == "d950m_infer") {       # input-bound: its draw, not the cap, holds it
                if (cap > $3) { pw = $3; tp = $2 } else { pw = cap; tp = $2 * cap / $3 }
            }
            print $1, "H200", cap, under(pw * (1 + 0.02 * gauss()), cap), tp
        }
    }' "$E" "$H" > "$out/h200-loops.csv"

awk -F, 'BEGIN { OFS = ","; print "job,gpu,cap_w,power_w,throughput" }
    NR > 1 && $2 >= 300 { print $1, "", $2, $6, $3 }' "$E" > "$out/tight.csv"

{ cat "$out/emerald-noisy.csv"
  printf 'nobase,,200,150,10\nnobase,,300,200,0\n'; } > "$out/mixed-bad.csv"
