#!/bin/sh
# pflex jobs end to end: the job map from recorded squeue and scontrol
# output (tests/data/slurm/), its CSV read back, --out, and bad usage or
# input that must exit 2 naming file:line with nothing on stdout.
set -u
P=${PFLEX:-build/pflex}
D=tests/data/slurm
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$P" jobs --help > "$T/help" || fail "--help exit"
grep -q '^usage: pflex jobs' "$T/help" || fail "--help usage"
grep -q '^EXAMPLES' "$T/help" || fail "--help has no EXAMPLES"
"$P" --help | grep -q '^  jobs ' || fail "pflex --help does not list jobs"

# The CSV of squeue + scontrol is the hand-written job map.
grep -v '^#' "$D/jobmap.csv" > "$T/want.csv"
"$P" jobs --slurm-squeue "$D/squeue.txt" --slurm-scontrol "$D/scontrol_detail.txt" --csv > "$T/got.csv" \
    || fail "csv exit"
cmp -s "$T/want.csv" "$T/got.csv" || { diff "$T/want.csv" "$T/got.csv"; fail "csv differs from jobmap.csv"; }
# squeue --json alone gives the same GPUs as scontrol alone
"$P" jobs --slurm-squeue "$D/squeue.json" --csv > "$T/json.csv" || fail "json input exit"
"$P" jobs --slurm-scontrol "$D/scontrol_detail.txt" --csv > "$T/sc.csv" || fail "scontrol exit"
cmp -s "$T/json.csv" "$T/sc.csv" || fail "squeue --json and scontrol disagree"
[ "$(wc -l < "$T/sc.csv")" -eq 25 ] || fail "scontrol map is not 24 GPUs"
# stdin, and the map read back
"$P" jobs --slurm-scontrol - --csv < "$D/scontrol_detail.txt" | cmp -s - "$T/sc.csv" || fail "stdin differs"
"$P" jobs --map "$T/got.csv" --csv | cmp -s - "$T/want.csv" || fail "--map round trip differs"

# The table and the JSON.
"$P" jobs --slurm-squeue "$D/squeue.txt" --slurm-scontrol "$D/scontrol_detail.txt" > "$T/table" || fail "table exit"
grep -q '^4242  llama-8b pretrain  gpu-01  0-7$' "$T/table" || fail "table row: $(head -3 "$T/table")"
grep -q '^4245  quick|eval         gpu-05  ?$' "$T/table" || fail "table unknown row"
grep -q '1 job not running, left out' "$T/table" || fail "table skipped count"
"$P" jobs --slurm-scontrol "$D/scontrol_oneliner.txt" --json > "$T/j" || fail "json exit"
tr -d ' \n' < "$T/j" > "$T/j1"
grep -q '"jobs":\[{"job":"5001","name":"ddpsmoketest","hosts":\[{"host":"node1-ib","gpus":\[0,2\],"gpus_unknown":false},{"host":"node3-ib","gpus":\[1,3\],"gpus_unknown":false}\]}\],"rows":4,"skipped":0' "$T/j1" \
    || fail "json: $(cat "$T/j1")"

# --out: written whole, no temporary left beside it.
mkdir "$T/out"
"$P" jobs --slurm-scontrol "$D/scontrol_detail.txt" --csv --out "$T/out/map.csv" > "$T/stdout" || fail "--out exit"
[ -s "$T/stdout" ] && fail "--out also wrote stdout"
cmp -s "$T/out/map.csv" "$T/sc.csv" || fail "--out content"
[ "$(ls "$T/out")" = "map.csv" ] || fail "--out left: $(ls "$T/out")"
"$P" jobs --slurm-scontrol "$D/scontrol_detail.txt" --out "$T/no/such/dir/map.csv" > "$T/stdout" 2> "$T/err"
[ $? -eq 1 ] || fail "--out to a missing folder: not exit 1"

# Bad input: exit 2, file:line on stderr, nothing on stdout.
bad() {     # bad NAME WANT-IN-STDERR ARGS...
    name=$1; want=$2; shift 2
    "$P" jobs "$@" > "$T/stdout" 2> "$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "$name: exit $rc, not 2"
    [ -s "$T/stdout" ] && fail "$name: wrote stdout"
    grep -q -- "$want" "$T/err" || fail "$name: stderr '$(cat "$T/err")' lacks '$want'"
}
printf '1|RUNNING|2|gpu-[01-03]|x\n' > "$T/q.txt"
bad "node count" "$T/q.txt:1: job 1: 2 nodes but its node list has 3" --slurm-squeue "$T/q.txt"
sed 's/IDX:4-7/IDX:4-6/' "$D/scontrol_detail.txt" > "$T/s.txt"
bad "gres count" "$T/s.txt:61: job 4243: GRES 'gpu:h200:4(IDX:4-6)' counts 4 GPUs but lists 3" --slurm-scontrol "$T/s.txt"
sed 's/4243,moe-ft,gpu-03,3/4243,moe-ft,gpu-01,3/' "$T/want.csv" > "$T/m.csv"
bad "gpu twice" "GPU 3 of host 'gpu-01' is held by job 4243 and by job 4242" --map "$T/m.csv"
printf '4242|RUNNING|2|gpu-[01-02]|other name\n' > "$T/q2.txt"
bad "merge" "job 4242 is named 'llama-8b pretrain' here but 'other name'" --slurm-squeue "$T/q2.txt" --slurm-scontrol "$D/scontrol_detail.txt"
bad "missing file" "no/such: No such file" --slurm-squeue no/such
bad "no input" "no input" --csv
bad "both formats" "choose one" --map "$T/want.csv" --csv --json
bad "two stdins" "only one input" --map - --slurm-squeue -
bad "unknown" "unknown argument" --frobnicate
echo ok
