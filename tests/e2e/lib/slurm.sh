# slurm.sh — a real Slurm on loopback for the end-to-end tests: munged,
# slurmctld and slurmd (Debian's packages) in the test's own folder with
# their own key, socket, configuration, ports, state and logs; one node,
# this machine, with 8 GPUs that gres.conf maps to placeholder devices.
#
#   tmp=$(mktemp -d ...); . "$here/lib/slurm.sh"
#   slurm_start LIFETIME      # the daemons, each bounded by timeout LIFETIME
#   sl squeue ...             # a Slurm command against them, bounded
#   slurm_stop                # jobs cancelled, daemons and our processes gone
#
# Every Slurm command and daemon, and so every job, carries a mark in its
# environment; the test itself does not.  What is left with it is ours.
# A test defines fail() before slurm_start; slurm_logs prints the logs.
chmod 755 "$tmp"            # munged wants its socket's folder open to all
conf=$tmp/slurm.conf
pids=""
mark="PFLEX_SLURM_E2E=$tmp"
sl() { env SLURM_CONF="$conf" "$mark" timeout 10 "$@"; }

gone() {    # gone PID SECONDS: 0 once the process is gone
    i=0
    while kill -0 "$1" 2>/dev/null; do
        [ "$i" -ge $(($2 * 10)) ] && return 1
        sleep 0.1
        i=$((i + 1))
    done
}
marked() {  # the processes of ours: slurmstepd, the jobs
    for d in /proc/[0-9]*; do
        tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qxF "$mark" && echo "${d#/proc/}"
    done
}
steps() {   # a job step's socket in the spool: its slurmstepd still runs
    for f in "$tmp/spool/"*.[0-9]*; do [ -S "$f" ] && return 0; done
    return 1
}
# a free TCP port on loopback
port() {
    while :; do
        p=$(( $(od -An -N2 -tu2 /dev/urandom) % 30000 + 20000 ))
        [ "$p" = "${1:-}" ] && continue
        if command -v ss >/dev/null 2>&1; then
            [ -z "$(ss -Htan "sport = :$p" 2>/dev/null)" ] && break
        else
            break
        fi
    done
    echo "$p"
}
waitfor() { # waitfor SECONDS COMMAND...: until COMMAND succeeds
    s=$1; shift; i=0
    until "$@"; do
        [ "$i" -ge $((s * 10)) ] && return 1
        sleep 0.1; i=$((i + 1))
    done
}
slurm_logs() {
    for l in "$tmp"/log/*; do [ -f "$l" ] && { echo "--- $l"; grep -v pmix "$l" | tail -15; }; done
}
slurm_stop() {
    ours=$(marked)
    if [ -n "$pids" ] && [ -S "$tmp/munge/socket" ]; then
        sl scancel --quiet --user=root >/dev/null 2>&1
        i=0
        while [ $i -lt 100 ] && steps; do
            sleep 0.1; i=$((i + 1))
        done
    fi
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done   # slurmd, slurmctld, munged
    for p in $pids; do gone "$p" 5 || kill -KILL "$p" 2>/dev/null; done
    # a stuck slurmstepd, or a job stopped by scontrol suspend
    for p in $(marked); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    for p in $ours; do gone "$p" 5 || break; done  # and reaped (the jobs' slurmstepd are init's children)
}
slurm_start() {
    life=$1
    # 1. munged: its own key, socket, pid, seed and log
    mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/dev" "$tmp/jobs"
    dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 2>/dev/null || fail "munge key"
    chmod 600 "$tmp/munge/munge.key"
    env "$mark" timeout $life munged --foreground --socket="$tmp/munge/socket" \
        --key-file="$tmp/munge/munge.key" --pid-file="$tmp/munge/munged.pid" \
        --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/munged.seed" >"$tmp/log/munged.out" 2>&1 &
    pids="$!"
    waitfor 10 test -S "$tmp/munge/socket" || fail "munged did not start"

    # 2. slurm.conf and gres.conf: this host, its real CPUs and memory, 8 GPUs
    host=$(hostname -s)
    hw=$(slurmd -C | sed -n 's/^NodeName=[^ ]* \(.*RealMemory=[0-9]*\).*/\1/p')
    [ -n "$hw" ] || fail "slurmd -C: $(slurmd -C 2>&1)"
    ctl_port=$(port)
    d_port=$(port "$ctl_port")
    for i in 0 1 2 3 4 5 6 7; do ln -s /dev/null "$tmp/dev/nvidia$i"; done  # character devices, as slurmd wants
    cat >"$conf" <<EOF
ClusterName=pflex-e2e
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/builtin
NodeName=$host NodeAddr=127.0.0.1 $hw Gres=gpu:8 State=UNKNOWN
PartitionName=e2e Nodes=$host Default=YES MaxTime=INFINITE OverSubscribe=FORCE:4 State=UP
EOF
    echo "Name=gpu File=$tmp/dev/nvidia[0-7]" >"$tmp/gres.conf"

    # 3. slurmctld and slurmd in the foreground, in the background of this script
    env SLURM_CONF="$conf" "$mark" timeout $life slurmctld -D -i >"$tmp/log/slurmctld.out" 2>&1 &
    pids="$! $pids"
    up() { sl scontrol ping 2>/dev/null | grep -q 'is UP'; }
    waitfor 20 up || fail "slurmctld does not answer"
    env SLURM_CONF="$conf" "$mark" timeout $life slurmd -D >"$tmp/log/slurmd.out" 2>&1 &
    pids="$! $pids"
    idle() { [ "$(sl sinfo -h -N -o '%T' 2>/dev/null)" = idle ]; }
    waitfor 20 idle || fail "node $host is not idle: $(sl sinfo -h -N -o '%T' 2>&1)"
}
