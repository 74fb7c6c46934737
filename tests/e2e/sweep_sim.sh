#!/bin/sh
# pflex sweep --backend sim end to end: presets, job files, caps, seeds,
# the CSV read back by pflex pfi, and bad input that must exit 2 naming
# the file and line with nothing on stdout.
set -u
P=${PFLEX:-build/pflex}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$P" sweep --help | grep -q 'usage: pflex sweep' || fail "--help"
"$P" sweep --help | grep -q -- '--cap-step' || fail "--help lacks --cap-step"
"$P" sweep --list-presets > "$T/presets" || fail "--list-presets exit"
grep -q '^emerald-pt-mpt-7b ' "$T/presets" || fail "preset list lacks emerald-pt-mpt-7b"

# A preset over the default caps: ten even steps of the H200's 200-700 W.
"$P" sweep --job llama-8b-pretrain-h200 --repeats 2 > "$T/a.csv" 2> "$T/a.err" || fail "sweep exit"
[ -s "$T/a.err" ] && fail "progress on a non-terminal stderr: $(cat "$T/a.err")"
head -1 "$T/a.csv" | grep -q '^job,gpu,gpus,cap_w,power_w,throughput,sm_clock_mhz,mem_clock_mhz,gpu_util,mem_copy_util,sm_active,sm_occupancy,tensor_active,dram_active,gr_engine_active,pcie_tx_bytes,pcie_rx_bytes,nvlink_tx_bytes,nvlink_rx_bytes$' \
    || fail "header: $(head -1 "$T/a.csv")"
[ "$(wc -l < "$T/a.csv")" -eq 23 ] || fail "want 11 caps x 2 repeats + header, got $(wc -l < "$T/a.csv") lines"
grep -q '^llama-8b-pretrain-h200,H200-SXM-141GB,8,700,' "$T/a.csv" || fail "no 700 W row"
grep -q '^llama-8b-pretrain-h200,H200-SXM-141GB,8,200,' "$T/a.csv" || fail "no 200 W row"
# Power under the cap (noise aside), memory clock fixed, SM clock falling.
awk -F, 'NR > 1 && $5 > $4 * 1.02 { print "power " $5 " over cap " $4; bad = 1 }
         NR > 1 && $8 != 4800 && $8 != 3201 { print "mem clock " $8; bad = 1 }
         END { exit bad }' "$T/a.csv" || fail "physics"
top=$(awk -F, '$4 == 700 { print $7; exit }' "$T/a.csv")
low=$(awk -F, '$4 == 200 { print $7; exit }' "$T/a.csv")
awk -v t="$top" -v l="$low" 'BEGIN { exit !(l < t) }' || fail "SM clock $low at 200 W not under $top at 700 W"
"$P" pfi --metric loss-area --json "$T/a.csv" > "$T/a.json" || fail "pfi reads the sweep"
grep -q '"pfi": 0\.' "$T/a.json" || fail "no PFI in $(cat "$T/a.json")"

# Same seed, same bytes; another seed, other noise.  --out and --progress.
"$P" sweep --job llama-8b-pretrain-h200 --repeats 2 --out "$T/b.csv" --progress 2> "$T/b.err" \
    || fail "--out exit"
cmp -s "$T/a.csv" "$T/b.csv" || fail "not deterministic"
grep -q '200 W' "$T/b.err" || fail "--progress printed nothing"
"$P" sweep --job llama-8b-pretrain-h200 --repeats 2 --seed 9 | cmp -s - "$T/a.csv" && fail "--seed ignored"

# Explicit caps, --cap-step, a job file.
"$P" sweep --job emerald-pt-mpt-7b --caps 400,300,200 --repeats 1 > "$T/c.csv" || fail "--caps"
[ "$(wc -l < "$T/c.csv")" -eq 4 ] || fail "--caps rows"
"$P" sweep --job emerald-pt-mpt-7b --cap-step 100 --repeats 1 > "$T/d.csv" || fail "--cap-step"
[ "$(cut -d, -f4 "$T/d.csv" | tr '\n' ' ')" = "cap_w 400 300 200 100 " ] || fail "--cap-step caps: $(cut -d, -f4 "$T/d.csv" | tr '\n' ' ')"
"$P" sweep --backend sim --job tests/data/job_llama8b_h200.json --repeats 1 > "$T/e.csv" || fail "job file"
grep -q '^llama-8b-my-pretrain,H200-SXM-141GB,16,' "$T/e.csv" || fail "job file rows"

bad() { # name, expected stderr part, args...
    name=$1; want=$2; shift 2
    "$P" sweep "$@" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$name: exit $rc, want 2"
    [ -s "$T/out" ] && fail "$name: wrote to stdout"
    grep -qF -- "$want" "$T/err" || fail "$name: stderr '$(cat "$T/err")' lacks '$want'"
}
bad syntax "tests/data/job_bad_syntax.json:5:" --job tests/data/job_bad_syntax.json
bad content "tests/data/job_bad_tp.json:4: field 'gpus'" --job tests/data/job_bad_tp.json
bad missing "no-such-job" --job no-such-job
bad nojob "--job" --repeats 2
bad capsrange "outside" --job emerald-pt-mpt-7b --caps 500
bad capsword "is not a list of caps" --job emerald-pt-mpt-7b --caps 300,abc
bad backend "unknown backend" --backend tpu --job emerald-pt-mpt-7b
bad option "unknown option" --job emerald-pt-mpt-7b --frobnicate
bad repeats "--repeats" --job emerald-pt-mpt-7b --repeats 0
exit 0
