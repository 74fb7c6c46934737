#!/bin/sh
# etcd rebuilt empty mid-event (the documented step after losing its data)
# under a controller with --etcd and a sim agent, on loopback: the new
# cluster's revisions start over, so the leader's new fence is below the
# one the agent holds and every push gets 409.  The leader must not flap
# (it used to resign and win again four times a second): at most two
# "leads" lines in the 6 s after the rebuild, and its log names the new
# cluster and the recovery.  Once the operator resets the agent's fence
# (DELETE /v1/fence with the token), the leader's pushes are taken again
# within its back-off.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
command -v etcd >/dev/null || { echo "skip: etcd is not installed (Debian etcd-server)"; exit 77; }
command -v etcdctl >/dev/null || { echo "skip: etcdctl is not installed"; exit 77; }
command -v jq >/dev/null || { echo "skip: jq is not installed"; exit 77; }
tmp=$(mktemp -d)
epid=""
trap 'stop_agents; [ -n "$epid" ] && { kill -KILL $epid 2>/dev/null; wait $epid 2>/dev/null; }; rm -rf "$tmp"' EXIT
trap 'fail "not done within the bound of 120 s (stuck at: ${step:-start})"' TERM INT
. "$(dirname "$0")/lib/agent.sh"

pbase=$((12000 + ($$ * 41) % 18000))
free_port() {
    while :; do
        pbase=$((pbase + 1))
        ss -ltn 2>/dev/null | awk '{ print $4 }' | grep -q ":$pbase\$" || { fp=$pbase; return; }
    done
}
free_port; cport=$fp
free_port; pport=$fp
endpoint=http://127.0.0.1:$cport
start_etcd() {  # DATA_DIR
    etcd --name e1 --data-dir "$1" --listen-client-urls $endpoint --advertise-client-urls $endpoint \
        --listen-peer-urls http://127.0.0.1:$pport --initial-advertise-peer-urls http://127.0.0.1:$pport \
        --initial-cluster e1=http://127.0.0.1:$pport --initial-cluster-state new \
        --heartbeat-interval 50 --election-timeout 500 >"$1.out" 2>&1 &
    epid=$!
    t_end=$(( $(date +%s) + 30 ))
    until etcdctl --dial-timeout 0.5s --command-timeout 1s --endpoints $endpoint endpoint health >/dev/null 2>&1; do
        [ "$(date +%s)" -lt $t_end ] || fail "etcd did not start: $(tail -3 "$1.out")"
        sleep 0.1
    done
}

step=etcd
start_etcd "$tmp/etcd-a"
# some history first, so that the first leader's fence is well above a
# fresh cluster's
i=0
while [ $i -lt 40 ]; do
    etcdctl --endpoints $endpoint put /filler/$i x >/dev/null || fail "etcdctl put"
    i=$((i + 1))
done

step=agent
start_agent "$tmp/agent.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --state-dir "$tmp/s" || fail "agent"
aport=$port

step=controller
event_end=$(($(date +%s) + 90))
"$PFLEX" controller run --agent "http://127.0.0.1:$aport" --token-file "$tmp/token" \
    --target "3000W,end=@$event_end,confirm=yes" --period 0.5 --lease 3 --etcd $endpoint \
    --etcd-prefix /pflex/test --name A --db "$tmp/A.db" --log "$tmp/A.log" &
agents="$agents $!"
fence() { curl -s -m 2 "http://127.0.0.1:$aport/v1/status" | jq -r '.fence // 0'; }
i=0
until [ "$(fence)" -gt 40 ] 2>/dev/null; do
    [ $i -lt 200 ] || fail "the agent never saw A's fence (at $(fence)): $(tail -5 "$tmp/A.log")"
    sleep 0.1; i=$((i + 1))
done
old=$(fence)

step=rebuild
kill -KILL $epid; wait $epid 2>/dev/null
start_etcd "$tmp/etcd-b"
leads_before=$(grep -c ' leads (fence' "$tmp/A.log")
sleep 6
leads=$(( $(grep -c ' leads (fence' "$tmp/A.log") - leads_before ))
[ "$leads" -le 2 ] || fail "leadership flapped: $leads 'leads' lines in 6 s after the rebuild"
grep -q 'etcd answers as a new cluster' "$tmp/A.log" || fail "A did not name the new cluster: $(tail -5 "$tmp/A.log")"
grep -q 'an agent holds a fence above ours' "$tmp/A.log" || fail "A met no 409: $(tail -5 "$tmp/A.log")"
[ "$(fence)" = "$old" ] || fail "the agent's fence moved from $old to $(fence) without a reset"

step=reset
port=$aport
expect 200 DELETE /v1/fence "" "$TOKEN"
i=0
until [ "$(fence)" -gt 0 ] 2>/dev/null && [ "$(fence)" -lt "$old" ]; do
    [ $i -lt 200 ] || fail "A's pushes were not taken after the reset (agent fence $(fence)): $(tail -5 "$tmp/A.log")"
    sleep 0.1; i=$((i + 1))
done
echo "ok: etcd rebuilt: fence $old held, $leads leadership change(s) in 6 s, pushes taken after the reset at fence $(fence)"
