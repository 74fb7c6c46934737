#!/bin/sh
# make bench: allocation at scale.  Generates seeded sweeps, then prints
# read-only vs read+plan times and their ratio, and planning alone on
# in-memory problems.  One core; medians.  Nothing here asserts a time.
set -e
BUILD=${BUILD:-build}
B=$BUILD/bench/alloc_bench
D=$BUILD/bench/data
mkdir -p "$D"
for n in 1000 1000000; do
    f="$D/sweep-$n-8.csv"
    [ -f "$f" ] || "$B" gen $n 8 20260502 "$f"
done
echo "(times: CPU seconds of the process, user + system, medians)"
echo "== planning alone, no I/O =="
"$B" mem 1000 8 501
"$B" mem 1000000 8 5
echo
echo "== reading the sweep vs reading + planning optimally =="
"$B" file "$D/sweep-1000-8.csv" 51
"$B" file "$D/sweep-1000000-8.csv" 5
echo
echo "== the whole command: pflex allocate, 1,000,000 jobs, output to /dev/null =="
if command -v /usr/bin/time > /dev/null; then
    /usr/bin/time -f "  %e s wall, %M KiB peak" "$BUILD/pflex" allocate "$D/sweep-1000000-8.csv" \
        --reduce 0.3 --csv > /dev/null
else
    t0=$(date +%s.%N); "$BUILD/pflex" allocate "$D/sweep-1000000-8.csv" --reduce 0.3 --csv > /dev/null
    echo "  $(echo "$(date +%s.%N) - $t0" | bc) s wall"
fi
