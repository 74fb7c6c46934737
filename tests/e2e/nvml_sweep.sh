#!/bin/sh
# pflex sweep --backend nvml against the fake NVML: a short sweep with the
# fake's job writing its token counter produces a sweep CSV that pflex pfi
# reads, and the original limits are back in the fake's state afterwards.
set -u
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL
fail() { echo "FAIL: $*"; exit 1; }

# The fake also plays the training job: it appends "UNIX_TIME TOKENS_TOTAL"
# to the token file whenever GPU 0's limit is set or its power read, at
# 10000 tokens/s uncapped, slowed like its SM clock (cube root of the power
# ratio, 650 W uncapped).  Timing on a busy machine cannot skew it.
: >"$tmp/tokens"
echo "tokens_file=$tmp/tokens" >"$FAKE_NVML_STATE"
"$PFLEX" sweep --backend nvml --list >"$tmp/list" || fail "--list failed"
grep -q 'NVIDIA H200' "$tmp/list" || fail "--list lacks the GPU name"
"$PFLEX" sweep --backend nvml --list --json >"$tmp/list.json" || fail "--list --json failed"
grep -q '"min_w": 200' "$tmp/list.json" || fail "--list --json lacks min_w"
grep -q '"uuid": "GPU-' "$tmp/list.json" || fail "--list --json lacks the uuid"

"$PFLEX" sweep --backend nvml --gpus 0,1 --caps 700,550,400,250 --window 0.2 --settle 0.02 \
    --throughput-file "$tmp/tokens" --job fakejob --out "$tmp/sweep.csv" 2>"$tmp/err" \
    || { cat "$tmp/err"; fail "the sweep failed"; }
cat "$tmp/sweep.csv"
[ "$(wc -l <"$tmp/sweep.csv")" -eq 5 ] || fail "expected a header and 4 rows"
head -1 "$tmp/sweep.csv" | grep -q '^job,gpu,gpus,cap_w,power_w,throughput,.*dram_active' \
    || fail "bad header"
grep -q '^fakejob,NVIDIA H200,2,250,' "$tmp/sweep.csv" || fail "no row at 250 W"
# Throughput falls with the cap.
awk -F, 'NR > 1 { if ($6 <= 0 || (NR > 2 && $6 >= prev)) bad = 1; prev = $6 }
         END { exit bad }' "$tmp/sweep.csv" || fail "throughput not falling with the cap"
# And both match what the fake and its job do: power from the energy
# counter over the window (5 %: read times on a busy machine), throughput
# from the job's own counter and clock (0.1 %).
awk -F, 'NR > 1 { p = 0.99 * $4; if (p > 650) p = 650; t = 10000 * exp(log(p / 650) / 3)
                  if ($5 < 0.95 * p || $5 > 1.05 * p || $6 < 0.999 * t || $6 > 1.001 * t) {
                      print "cap " $4 ": power " $5 " (want " p "), throughput " $6 " (want " t ")"
                      bad = 1 } }
         END { exit bad }' "$tmp/sweep.csv" || fail "power or throughput off"

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
