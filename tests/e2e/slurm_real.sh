#!/bin/sh
# pflex jobs against a real Slurm on loopback: munged, slurmctld and slurmd
# (Debian's packages) started here in a temporary folder with their own key,
# socket, configuration, ports, state and logs; one node, this machine, with
# 8 GPUs that gres.conf maps to placeholder device files.  Three batch jobs
# ask for 3, 2 and 1 GPUs (names with a space and a '|'); once they run, the
# live `squeue --noheader -o '%A|%T|%D|%N|%j'`, `scontrol show job -d` and
# `squeue --json` go through `pflex jobs`, and the map must give each job
# the name, host and GPU indices the job itself was given (SLURM_JOB_NAME,
# SLURMD_NODENAME and SLURM_JOB_GPUS in its environment) and that scontrol's
# IDX field lists; the CSV must read back as a job map (the reader of the
# controller's --job-map).  Everything is stopped on every exit; skips (77)
# without the daemons or when not root (slurmd runs jobs as their user).
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout -k 10 60 sh "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
P=${PFLEX:-$root/build/pflex}
PATH=$PATH:/usr/sbin:/sbin
for tool in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo jq timeout; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "skip: $tool not installed (Debian packages munge, slurmctld, slurmd, slurm-client, jq)"
        exit 77
    fi
done
[ "$(id -u)" = 0 ] || { echo "skip: not root (slurmd must run as root to start jobs)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pflex-slurm.XXXXXX") || exit 1
. "$here/lib/slurm.sh"
cleanup() {
    trap '' INT TERM
    slurm_stop
    if [ -n "${PFLEX_E2E_KEEP:-}" ]; then cp -r "$tmp" "$PFLEX_E2E_KEEP"; fi
    rm -rf "$tmp"
}
trap 'cleanup' EXIT
trap 'exit 130' INT TERM HUP PIPE
fail() {
    echo "FAIL: $*"
    slurm_logs
    exit 1
}
slurm_start 70

# three jobs; each writes what Slurm told it, then sleeps
submit() {  # submit GPUS NAME
    sl sbatch --parsable --gres="gpu:$1" --job-name="$2" --chdir="$tmp/jobs" --output=/dev/null \
        --wrap "env > '$tmp/jobs/env.tmp.'\$SLURM_JOB_ID && mv '$tmp/jobs/env.tmp.'\$SLURM_JOB_ID '$tmp/jobs/env.'\$SLURM_JOB_ID; exec sleep 60"
}
j1=$(submit 3 'llama-8b pretrain') || fail "sbatch 1"
j2=$(submit 2 'moe|ft') || fail "sbatch 2"
j3=$(submit 1 eval) || fail "sbatch 3"
all_running() {
    [ "$(sl squeue --noheader -o '%T' 2>/dev/null | grep -c '^RUNNING$')" -eq 3 ] &&
        [ -s "$tmp/jobs/env.$j1" ] && [ -s "$tmp/jobs/env.$j2" ] && [ -s "$tmp/jobs/env.$j3" ]
}
waitfor 20 all_running || fail "the jobs are not all running: $(sl squeue 2>&1)"

# 5. what Slurm prints, as docs/slurm.md says pflex reads it
sl squeue --noheader -o '%A|%T|%D|%N|%j' >"$tmp/squeue.txt" || fail "squeue"
sl scontrol show job -d >"$tmp/scontrol.txt" || fail "scontrol"
sl squeue --json >"$tmp/squeue.json" || fail "squeue --json"

# The truth, twice over.  (a) what each job was given, from its environment:
for j in $j1 $j2 $j3; do
    e=$tmp/jobs/env.$j
    name=$(sed -n 's/^SLURM_JOB_NAME=//p' "$e")
    node=$(sed -n 's/^SLURMD_NODENAME=//p' "$e")
    gpus=$(sed -n 's/^SLURM_JOB_GPUS=//p' "$e")
    [ -n "$gpus" ] || fail "job $j has no SLURM_JOB_GPUS"
    for g in $(echo "$gpus" | tr ',' ' '); do echo "$j,$name,$node,$g"; done
done | sort -t, -k1,1n -k4,4n >"$tmp/want.body"
{ echo "job,name,host,gpu"; cat "$tmp/want.body"; } >"$tmp/want.csv"
[ "$(wc -l <"$tmp/want.body")" -eq 6 ] || fail "the jobs hold $(wc -l <"$tmp/want.body") GPUs, not 6"
[ "$(cut -d, -f4 "$tmp/want.body" | sort -u | wc -l)" -eq 6 ] || fail "a GPU given twice: $(cat "$tmp/want.body")"
grep -q "^$j1,llama-8b pretrain,$host," "$tmp/want.body" || fail "job 1 as the job saw it: $(cat "$tmp/want.body")"
# (b) scontrol's detail lines, read by awk: JobId, JobName, Nodes= and IDX:
awk -v want_host="$host" '
    /^JobId=/ { id = $1; sub(/^JobId=/, "", id); name = $0; sub(/^JobId=[0-9]+ JobName=/, "", name) }
    /^ *Nodes=.* GRES=.*IDX:/ {
        n = $1; sub(/^ *Nodes=/, "", n)
        s = $0; sub(/.*IDX:/, "", s); sub(/\).*/, "", s)
        k = split(s, part, ",")
        for (i = 1; i <= k; i++) {
            if (split(part[i], r, "-") == 2) { a = r[1]; b = r[2] } else { a = b = part[i] }
            for (g = a; g <= b; g++) print id "," name "," n "," g
        }
    }' "$tmp/scontrol.txt" | sort -t, -k1,1n -k4,4n >"$tmp/idx.body"
cmp -s "$tmp/want.body" "$tmp/idx.body" ||
    { diff "$tmp/want.body" "$tmp/idx.body"; fail "scontrol's IDX differ from the jobs' SLURM_JOB_GPUS"; }

# 6. pflex jobs: the CSV, the JSON, squeue alone, squeue --json
"$P" jobs --slurm-squeue "$tmp/squeue.txt" --slurm-scontrol "$tmp/scontrol.txt" --csv >"$tmp/got.csv" 2>"$tmp/err" ||
    fail "pflex jobs --csv: $(cat "$tmp/err")"
cmp -s "$tmp/want.csv" "$tmp/got.csv" || { diff "$tmp/want.csv" "$tmp/got.csv"; fail "the job map differs from what the jobs were given"; }
"$P" jobs --slurm-squeue "$tmp/squeue.txt" --slurm-scontrol "$tmp/scontrol.txt" --json >"$tmp/got.json" 2>"$tmp/err" ||
    fail "pflex jobs --json: $(cat "$tmp/err")"
jq -r '.jobs[] | .job as $j | .name as $n | .hosts[] | select(.gpus_unknown == false) | .host as $h
       | .gpus[] | "\($j),\($n),\($h),\(.)"' "$tmp/got.json" | sort -t, -k1,1n -k4,4n >"$tmp/json.body" || fail "jq"
cmp -s "$tmp/want.body" "$tmp/json.body" || { diff "$tmp/want.body" "$tmp/json.body"; fail "the JSON map differs"; }
[ "$(jq '.jobs | length' "$tmp/got.json")" -eq 3 ] || fail "JSON: not 3 jobs"
[ "$(jq '[.jobs[].hosts[] | select(.gpus_unknown)] | length' "$tmp/got.json")" -eq 0 ] || fail "JSON: GPUs unknown"
[ "$(jq '.rows' "$tmp/got.json")" -eq 6 ] || fail "JSON: rows $(jq '.rows' "$tmp/got.json")"
[ "$(jq '.skipped' "$tmp/got.json")" -eq 0 ] || fail "JSON: skipped $(jq '.skipped' "$tmp/got.json")"
# squeue names the hosts only: one row per job with the GPU unknown
"$P" jobs --slurm-squeue "$tmp/squeue.txt" --csv >"$tmp/sq.csv" 2>"$tmp/err" || fail "squeue alone: $(cat "$tmp/err")"
{ echo "job,name,host,gpu"; cut -d, -f1-3 "$tmp/want.body" | uniq | sed 's/$/,/'; } | cmp -s - "$tmp/sq.csv" ||
    fail "squeue alone: $(cat "$tmp/sq.csv")"
# Slurm 22.05's squeue --json gives the GPUs too
"$P" jobs --slurm-squeue - --csv <"$tmp/squeue.json" >"$tmp/sqj.csv" 2>"$tmp/err" || fail "squeue --json: $(cat "$tmp/err")"
cmp -s "$tmp/want.csv" "$tmp/sqj.csv" || { diff "$tmp/want.csv" "$tmp/sqj.csv"; fail "squeue --json map differs"; }
# the CSV through a pipe, read back as the controller's --job-map reads it
sl scontrol show job -d | "$P" jobs --slurm-scontrol - --csv | "$P" jobs --map - --csv >"$tmp/back.csv" 2>"$tmp/err" ||
    fail "the piped CSV does not read back as a job map: $(cat "$tmp/err")"
cmp -s "$tmp/want.csv" "$tmp/back.csv" || { diff "$tmp/want.csv" "$tmp/back.csv"; fail "piped map differs"; }
# the table names the jobs and their ranges
"$P" jobs --slurm-scontrol "$tmp/scontrol.txt" >"$tmp/table" || fail "table exit"
grep -q "^$j1 *llama-8b pretrain *$host " "$tmp/table" || fail "table: $(cat "$tmp/table")"

# 7. a job that ends is left out
sl scancel "$j3" || fail "scancel"
ended() { ! sl squeue --noheader -o '%A' 2>/dev/null | grep -qx "$j3"; }
waitfor 15 ended || fail "job $j3 does not end"
sl scontrol show job -d >"$tmp/scontrol.after" || fail "scontrol after scancel"
"$P" jobs --slurm-scontrol "$tmp/scontrol.after" --csv >"$tmp/after.csv" || fail "after scancel"
grep -v "^$j3," "$tmp/want.csv" | cmp -s - "$tmp/after.csv" || fail "after scancel: $(cat "$tmp/after.csv")"
[ "$("$P" jobs --slurm-scontrol "$tmp/scontrol.after" --json | jq .skipped)" -eq 1 ] || fail "the ended job is not counted as skipped"
echo "ok: slurm $(slurmctld -V | sed 's/^slurm[^ ]* //') on $host, jobs $j1 $j2 $j3: $(tail -n +2 "$tmp/got.csv" | tr '\n' ' ')"
