#!/bin/sh
# The scheduler lever against a real Slurm on loopback (munged, slurmctld
# and slurmd in a temporary folder, as slurm_real.sh starts them): three
# batch jobs of 2 GPUs each are real processes that drive a sim agent's
# GPUs (each writes its PID to the agent's --sim-load-dir; a GPU is busy
# while that process runs, idle once Slurm stops it).  A fourth job in the
# job map, 999999, is unknown to Slurm.  A target under every GPU at its
# least cap makes `pflex controller run --scheduler slurm` try 999999
# first (its weight 0: the cheapest), log Slurm's refusal and leave it to
# caps, then suspend job 1 (cheaper than job 2, weight 3; job 3 is cap
# only): squeue shows it S, the others R, and the site's measured power
# meets the target.  The controller is killed (-9) mid-event and started
# again: it resumes job 1 when the event ends (R).  A second event: job 1
# paused, the controller killed, `pflex controller release` resumes it.
# A third: scontrol hanging, then missing: logged, caps alone, nothing
# left suspended.  Skips (77) without the daemons or when not root.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout -k 10 100 sh "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
P=${PFLEX:-$root/build/pflex}
PATH=$PATH:/usr/sbin:/sbin
for tool in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo jq curl timeout; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "skip: $tool not installed (Debian packages munge, slurmctld, slurmd, slurm-client, jq, curl)"
        exit 77
    fi
done
[ "$(id -u)" = 0 ] || { echo "skip: not root (slurmd must run as root to start jobs)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pflex-suspend.XXXXXX") || exit 1
. "$here/lib/slurm.sh"
ctl=""
cleanup() {
    trap '' INT TERM
    [ -n "$ctl" ] && kill -KILL "$ctl" 2>/dev/null
    [ -n "${agent:-}" ] && kill -KILL "$agent" 2>/dev/null
    if [ -n "$pids" ] && [ -S "$tmp/munge/socket" ]; then
        for j in ${j1:-} ${j2:-} ${j3:-}; do sl scontrol resume "$j" >/dev/null 2>&1; done
    fi
    slurm_stop
    if [ -n "${PFLEX_E2E_KEEP:-}" ]; then cp -r "$tmp" "$PFLEX_E2E_KEEP"; fi
    rm -rf "$tmp"
}
trap 'cleanup' EXIT
trap 'exit 130' INT TERM HUP PIPE
fail() {
    echo "FAIL: $*"
    sl squeue 2>&1 | head -5
    slurm_logs
    exit 1
}
# 1. Slurm on loopback (lib/slurm.sh), and the folder the jobs' PIDs go in
slurm_start 110
mkdir -p "$tmp/load"
chmod 777 "$tmp/load"

# 2. the jobs: each drives the GPUs Slurm gave it (docs/slurm-levers.md)
cat >"$tmp/job.sh" <<EOF
#!/bin/sh
for g in \$(echo "\$SLURM_JOB_GPUS" | tr , ' '); do
    echo \$\$ >"$tmp/load/gpu\$g.tmp" && mv "$tmp/load/gpu\$g.tmp" "$tmp/load/gpu\$g"
done
exec sleep 300
EOF
chmod 755 "$tmp/job.sh"
submit() { sl sbatch --parsable --gres=gpu:2 --job-name="$1" --chdir="$tmp/jobs" --output=/dev/null "$tmp/job.sh"; }
j1=$(submit one) || fail "sbatch 1"
j2=$(submit two) || fail "sbatch 2"
j3=$(submit three) || fail "sbatch 3"
state() { sl squeue --noheader -j "$1" -o '%t' 2>/dev/null; }
all_running() {
    [ "$(state "$j1")$(state "$j2")$(state "$j3")" = RRR ] && [ "$(ls "$tmp/load" | grep -c '^gpu[0-9]$')" -eq 6 ]
}
waitfor 20 all_running || fail "the jobs are not all running: $(sl squeue 2>&1)"

# 3. the sim agent, loaded by the jobs' processes; the job map from Slurm,
# plus job 999999 that Slurm does not know on the two GPUs left
PFLEX=$P
. "$here/lib/agent.sh"
fail() {
    echo "FAIL: $*"
    sl squeue 2>&1 | head -5
    for l in "$tmp"/log/*; do [ -f "$l" ] && { echo "--- $l"; grep -v pmix "$l" | tail -15; }; done
    exit 1
}
start_agent "$tmp/log/agent.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --throughput-window 1 --hostname "$host" --state-dir "$tmp/agent" --sim-load-dir "$tmp/load" || fail "agent"
agent=$apid
url="http://127.0.0.1:$port"
sl scontrol show job -d | "$P" jobs --slurm-scontrol - --csv >"$tmp/map.csv" || fail "pflex jobs"
used=$(tail -n +2 "$tmp/map.csv" | cut -d, -f4 | sort -n | tr '\n' ' ')
free=$(for g in 0 1 2 3 4 5 6 7; do echo "$used" | grep -qw "$g" || echo "$g"; done)
for g in $free; do echo "999999,ghost,$host,$g" >>"$tmp/map.csv"; done
[ "$(wc -l <"$tmp/map.csv")" -eq 9 ] || fail "job map: $(cat "$tmp/map.csv")"
cat >"$tmp/jobs.csv" <<EOF
job,levers,loss_budget,max_pause,weight
$j1,cap+pause,100%,120,1
$j2,cap+pause,100%,120,3
$j3,cap,,,1
999999,cap+pause,100%,120,0
EOF
power() { curl -s -m 5 "$url/v1/status" | jq '[.gpus[].power_w] | add | floor'; }
busy=$(power)
awk -v w="$busy" 'BEGIN { exit !(w > 3500) }' || fail "6 busy GPUs draw $busy W"

# 4. event 1: 1500 W, under 8 GPUs at their least (1600 W)
run_ctl() {     # run_ctl LOG ARGS...
    l=$1; shift
    "$P" controller run --agent "$url" --token-file "$tmp/token" --job-map "$tmp/map.csv" --jobs "$tmp/jobs.csv" \
        --period 0.5 --lease 3 --db "$tmp/ctl.db" --log "$l" --scheduler slurm --pause-idle-w 84 "$@" &
    ctl=$!
}
export SLURM_CONF="$conf"
end1=$(($(date +%s) + 22))
run_ctl "$tmp/log/ctl1.log" --target "1500W,start=+2s,end=@$end1,confirm=yes"
paused() { [ "$(state "$j1")$(state "$j2")$(state "$j3")" = SRR ]; }
waitfor 15 paused || fail "job $j1 is not suspended alone: $(sl squeue 2>&1)"
grep -Eq "pause: job 999999 not paused, left to caps: .*(Invalid job id|Unexpected message)" "$tmp/log/ctl1.log" ||
    fail "the unknown job's refusal is not logged"
met() { awk -v w="$(power)" 'BEGIN { exit !(w <= 1500) }'; }
waitfor 8 met || fail "measured $(power) W over the 1500 W target"
echo "event 1: job $j1 suspended, the site at $(power) W"
# killed mid-event: the job stays suspended; the state says until when
kill -KILL "$ctl"; wait "$ctl" 2>/dev/null; ctl=""
[ "$(state "$j1")" = S ] || fail "job $j1 not suspended after the kill"
"$P" controller history --db "$tmp/ctl.db" --what targets >/dev/null || fail "history after kill"
run_ctl "$tmp/log/ctl2.log"
resumed() { [ "$(state "$j1")$(state "$j2")$(state "$j3")" = RRR ]; }
waitfor $((end1 - $(date +%s) + 6)) resumed || fail "job $j1 not resumed after the event: $(sl squeue 2>&1)"
[ "$(date +%s)" -ge $((end1 - 1)) ] || fail "job $j1 resumed before the event's end"
grep -q "pause: job $j1 resumed" "$tmp/log/ctl2.log" || fail "the restarted controller did not resume $j1"
kill -TERM "$ctl"; wait "$ctl" 2>/dev/null; ctl=""

# 5. event 2: paused, the controller killed, `controller release` resumes
end2=$(($(date +%s) + 40))
run_ctl "$tmp/log/ctl3.log" --target "1500W,end=@$end2,confirm=yes"
waitfor 10 paused || fail "event 2: job $j1 is not suspended: $(sl squeue 2>&1)"
kill -KILL "$ctl"; wait "$ctl" 2>/dev/null; ctl=""
"$P" controller release --db "$tmp/ctl.db" --job 12345 >"$tmp/rel.out" 2>"$tmp/rel.err"
[ $? = 2 ] && grep -q "job 12345: the state holds no pause" "$tmp/rel.err" || fail "release of an unknown job"
"$P" controller release --db "$tmp/ctl.db" >"$tmp/rel.out" 2>&1 || fail "release: $(cat "$tmp/rel.out")"
grep -q "^job $j1 resumed" "$tmp/rel.out" || fail "release: $(cat "$tmp/rel.out")"
resumed || fail "job $j1 not running after release: $(sl squeue 2>&1)"

# 6. event 3: scontrol that hangs, then none: logged, caps alone, nothing suspended
cat >"$tmp/slow-scontrol" <<EOF
#!/bin/sh
[ "\$1" = suspend ] && sleep 30
exec scontrol "\$@"
EOF
chmod 755 "$tmp/slow-scontrol"
rm -f "$tmp/ctl.db"*      # a new site: no budget spent
end3=$(($(date +%s) + 30))
run_ctl "$tmp/log/ctl4.log" --target "1500W,end=@$end3,confirm=yes" --scontrol "$tmp/slow-scontrol" \
    --scheduler-timeout 1
hung() { grep -qs "pause: job $j1 not paused, left to caps: .*no answer within 1 s" "$tmp/log/ctl4.log"; }
waitfor 12 hung || fail "a hanging scontrol is not logged"
kill -TERM "$ctl"; wait "$ctl" 2>/dev/null; ctl=""
resumed || fail "a job left suspended by a hanging scontrol: $(sl squeue 2>&1)"
run_ctl "$tmp/log/ctl5.log" --target "1500W,end=@$end3,confirm=yes" --scontrol "$tmp/none/scontrol"
missing() { grep -qs "pause: job $j1 not paused, left to caps: .*not found" "$tmp/log/ctl5.log"; }
waitfor 8 missing || fail "a missing scontrol is not logged"
kill -TERM "$ctl"; wait "$ctl" 2>/dev/null; ctl=""
resumed || fail "a job suspended with scontrol missing"
echo "ok: jobs $j1 $j2 $j3 on $host: $busy W busy, paused under 1500 W, resumed on restart and by release"
