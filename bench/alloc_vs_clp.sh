#!/bin/sh
# pflex allocate --policy optimal beside clp (COIN-OR) on the same problem.
# On convex curves the optimal policy solves the convex-hull relaxation of the
# allocation, which is this LP: a weight l[j,k] >= 0 on each row k of job j,
# sum_k l[j,k] = 1 for each job, sum l[j,k] * power_w[j,k] * gpus[j] <= B,
# maximise sum l[j,k] * throughput[j,k]; B is pflex's budget_w (0.7 x
# baseline_w, baseline_w the sum of gpus x power_w at each job's highest cap).
# The MPS file minimises the negated throughput (clp prints that objective).
# Times: CPU seconds (user + system, /usr/bin/time) of the whole process,
# reading included on both sides; medians of 3 runs, alternating.  Writing
# the MPS file is timed apart and not counted.  clp uses its dual simplex,
# the fastest of its methods here (10,000 jobs: dual 1.6 s, primal 3.1 s,
# barrier 21.6 s).  Sizes are the arguments, 1,000 and 10,000 jobs by default:
# at 100,000 jobs one clp run takes 365 s (pflex 0.24 s), far too long for
# make bench, so 100,000 and 1,000,000 are left out; pass them as arguments
# to measure them.
# Nothing here asserts a time.
BUILD=${BUILD:-build}
D=$BUILD/bench/data
CLP=${CLP:-clp}
command -v "$CLP" >/dev/null 2>&1 || { echo "  (clp not installed: scripts/deps.sh bench installs coinor-clp; skipped)"; exit 0; }
[ -x /usr/bin/time ] || { echo "  (/usr/bin/time not installed; skipped)"; exit 0; }
mkdir -p "$D"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# The LP of a sweep with budget b, as free-format MPS: run with the sweep twice.
# Pass 1 counts the jobs (a job's rows are consecutive), pass 2 writes one
# column per row of the sweep.
cat > "$T/mps.awk" <<'AWK'
NR == FNR { if (FNR > 1 && $1 != last) { nj++; last = $1 } next }
FNR == 1 { print "NAME alloc"; print "ROWS"; print " N obj"; print " L pow"
           for (i = 1; i <= nj; i++) print " E j" i
           print "COLUMNS"; last = ""; next }
{ if ($1 != last) { j++; last = $1 }
  k++
  printf " l%d obj %.17g j%d 1\n l%d pow %.17g\n", k, -$5, j, k, $4 * $2 }
END { print "RHS"; printf " rhs pow %.17g\n", b
      for (i = 1; i <= nj; i++) print " rhs j" i " 1"
      print "ENDATA" }
AWK

# CPU seconds and peak KiB of one command, appended to file $1.
timed() {
    out=$1; shift
    /usr/bin/time -f "%U %S %M" -o "$T/t" "$@" || return 1
    awk '{ printf "%.2f %d\n", $1 + $2, $3 }' "$T/t" >> "$out"
}

median() { sort -n "$1" | awk '{ v[NR] = $'"$2"' } END { print v[int((NR + 1) / 2)] }'; }

echo "  jobs      pflex objective      clp objective  rel.diff   pflex s  clp s  pflex/clp  pflex KiB  clp KiB  (MPS write s, not counted)"
[ $# -gt 0 ] || set -- 1000 10000
for n in "$@"; do
    f=$D/sweep-$n-8.csv
    [ -f "$f" ] || "$BUILD/bench/alloc_bench" gen $n 8 20260502 "$f" || exit 1
    "$BUILD/pflex" allocate "$f" --reduce 0.3 --policy optimal --json > "$T/p.json" || exit 1
    budget=$(awk -F'[:,]' '/"budget_w"/ { gsub(/ /, "", $2); print $2; exit }' "$T/p.json")
    pobj=$(awk -F'[:,]' '/"objective"/ { gsub(/ /, "", $2); print $2; exit }' "$T/p.json")
    : > "$T/w"; timed "$T/w" awk -F, -v b="$budget" -f "$T/mps.awk" "$f" "$f" > "$T/lp.mps" || exit 1
    : > "$T/pf"; : > "$T/cl"
    for r in 1 2 3; do
        timed "$T/pf" "$BUILD/pflex" allocate "$f" --reduce 0.3 --policy optimal --json > /dev/null || exit 1
        timed "$T/cl" "$CLP" "$T/lp.mps" -dualsimplex > "$T/clp.out" || exit 1
    done
    cobj=$(awk '/^Optimal objective/ { v = $3; sub(/^-/, "", v); print v }' "$T/clp.out")
    [ -n "$cobj" ] || { echo "  clp found no optimum:"; tail -3 "$T/clp.out"; exit 1; }
    pt=$(median "$T/pf" 1); ct=$(median "$T/cl" 1)
    echo "$n $pt $ct" >> "$T/growth"
    awk -v n=$n -v po="$pobj" -v co="$cobj" -v pt=$pt -v ct=$ct -v pm=$(median "$T/pf" 2) \
        -v cm=$(median "$T/cl" 2) -v w="$(cut -d' ' -f1 "$T/w")" 'BEGIN {
        d = po - co; if (d < 0) d = -d
        printf "  %-7d %17.4f %18.4f  %8.1e  %7.2f %6.2f  %9.3f  %9d %8d  (%s)\n",
               n, po, co, d / co, pt, ct, (ct > 0 ? pt / ct : 0), pm, cm, w }'
done
awk 'NR == 1 { n0 = $1; p0 = $2; c0 = $3 }
     END { if (NR > 1 && p0 > 0 && c0 > 0) {
               e = log(10) / log($1 / n0)
               printf "  growth per 10x jobs: pflex x%.1f, clp x%.1f (10 is linear)\n",
                      exp(log($2 / p0) * e), exp(log($3 / c0) * e) } }' "$T/growth"
echo "  (clp prints its objective to 10 digits, so a relative difference under ~1e-10 is below what it shows;"
echo "   /usr/bin/time counts in 0.01 s, so the 1,000-job times, and the growth from them, are coarse)"
