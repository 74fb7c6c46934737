#!/bin/sh
# pflex sweep --backend nvml against the fake NVML: a short sweep with a
# fake job writing its token counter produces a sweep CSV that pflex pfi
# reads, and the original limits are back in the fake's state afterwards.
set -u
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
tmp=$(mktemp -d)
job=
trap '[ -n "$job" ] && kill $job 2>/dev/null; rm -rf "$tmp"' EXIT
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE"
unset FAKE_NVML_FAIL
fail() { echo "FAIL: $*"; exit 1; }

# The fake job: every 10 ms it appends "UNIX_TIME TOKENS_TOTAL"; its rate
# follows GPU 0's power limit the way the fake's SM clock does (cube root
# of the power ratio, 650 W uncapped).  It stops by itself after 20 s.
awk -v state="$FAKE_NVML_STATE" -v out="$tmp/tokens" 'BEGIN {
    clock = "date +%s.%N"; clock | getline t; close(clock); t0 = t; tokens = 0
    while (t - t0 < 20) {
        lim = 700000
        while ((getline line < state) > 0)
            if (line ~ /^gpu0\.limit_mw=/) { sub(/^[^=]*=/, "", line); lim = line + 0 }
        close(state)
        p = 0.99 * lim; if (p > 650000) p = 650000
        system("sleep 0.01")
        clock | getline now; close(clock)
        tokens += 10000 * exp(log(p / 650000) / 3) * (now - t)
        t = now
        printf "%.6f %.3f\n", t, tokens >> out; fflush(out)
    }
}' &
job=$!
"$PFLEX" sweep --backend nvml --list >"$tmp/list" || fail "--list failed"
grep -q 'NVIDIA H200' "$tmp/list" || fail "--list lacks the GPU name"
"$PFLEX" sweep --backend nvml --list --json >"$tmp/list.json" || fail "--list --json failed"
grep -q '"min_w": 200' "$tmp/list.json" || fail "--list --json lacks min_w"
grep -q '"uuid": "GPU-' "$tmp/list.json" || fail "--list --json lacks the uuid"

i=0
while [ ! -s "$tmp/tokens" ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done
[ -s "$tmp/tokens" ] || fail "the fake job wrote nothing"

"$PFLEX" sweep --backend nvml --gpus 0,1 --caps 700,550,400,250 --window 0.3 --settle 0.05 \
    --throughput-file "$tmp/tokens" --job fakejob --out "$tmp/sweep.csv" 2>"$tmp/err" \
    || { cat "$tmp/err"; fail "the sweep failed"; }
cat "$tmp/sweep.csv"
[ "$(wc -l <"$tmp/sweep.csv")" -eq 5 ] || fail "expected a header and 4 rows"
head -1 "$tmp/sweep.csv" | grep -q '^job,gpu,gpus,cap_w,power_w,throughput,.*dram_active' \
    || fail "bad header"
grep -q '^fakejob,NVIDIA H200,2,250,' "$tmp/sweep.csv" || fail "no row at 250 W"
# Power follows the cap; throughput falls with it.
awk -F, 'NR > 1 { if ($5 > $4 + 0.5 || $6 <= 0) bad = 1; if (NR > 2 && $6 >= prev) bad = 1; prev = $6 }
         END { exit bad }' "$tmp/sweep.csv" || fail "power above a cap, or throughput not falling"

"$PFLEX" pfi "$tmp/sweep.csv" >"$tmp/pfi" 2>&1 || { cat "$tmp/pfi"; fail "pflex pfi rejects the sweep"; }
cat "$tmp/pfi"
grep -q fakejob "$tmp/pfi" || fail "pflex pfi does not show the job"

grep -qx 'gpu0.limit_mw=700000' "$FAKE_NVML_STATE" || fail "GPU 0 limit not restored"
grep -qx 'gpu1.limit_mw=700000' "$FAKE_NVML_STATE" || fail "GPU 1 limit not restored"

# A dry run changes nothing and writes no CSV.
"$PFLEX" sweep --backend nvml --dry-run --caps 500 --power-only >"$tmp/dry" || fail "dry run failed"
grep -q 'caps (W): 500' "$tmp/dry" || fail "dry run does not show the plan"
grep -qx 'gpu0.limit_mw=700000' "$FAKE_NVML_STATE" || fail "the dry run changed a limit"
echo ok
