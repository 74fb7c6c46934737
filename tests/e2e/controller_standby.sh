#!/bin/sh
# Two controllers and a standby's takeover, on loopback: a real 3-member
# etcd cluster (Debian's etcd-server), three `pflex agent --backend sim`
# nodes, controllers A and B with --etcd.  A leads (it starts first), B
# stands by; a target is given to A's API alone, and B follows it and A's
# learned curves through etcd.  Mid-event A is killed with SIGKILL: B takes
# over within two periods and the site's power (read straight from the
# agents) stays at or under the target after the ramp.  A push with A's
# stale fencing token is refused (409).  Then etcd's own leader member is
# killed: nothing changes (B keeps leading, no takeover, the site stays
# under).  Then a second member (the quorum is lost): B cannot renew its
# lease and stands down within it; the agents keep the last caps until
# their leases lapse.  Prints the figures.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 200 sh "$0" "$@"
command -v etcd >/dev/null || { echo "skip: etcd is not installed (Debian etcd-server)"; exit 77; }
command -v jq >/dev/null || { echo "skip: jq is not installed"; exit 77; }
tmp=$(mktemp -d)
etcds=""
trap 'touch "$tmp/meter.stop"; stop_agents; for p in $etcds; do kill -KILL $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
# the bound's SIGTERM: say so, with the logs, rather than end in silence
trap 'fail "not done within the bound of 200 s (stuck at: ${step:-start})"' TERM INT
. "$(dirname "$0")/lib/agent.sh"
now() { date +%s.%N; }
period=2

# ports not listened on now, from a base picked by the pid: free_port
# sets $fp
# (below the kernel's ephemeral range, 32768 and up, where the suite's
# earlier connections may still hold a port)
pbase=$((12000 + ($$ * 37) % 18000))
free_port() {
    while :; do
        pbase=$((pbase + 1))
        ss -ltn 2>/dev/null | awk '{ print $4 }' | grep -q ":$pbase\$" || { fp=$pbase; return; }
    done
}
ectl() { etcdctl --dial-timeout 0.5s --command-timeout 1s "$@"; }

# 1. etcd: three members on loopback, quick elections (heartbeat 50 ms)
step=1
cluster=""
for m in 1 2 3; do
    free_port; eval "cp$m=$fp"
    free_port; eval "pp$m=$fp"
    eval "cluster=\"\${cluster:+\$cluster,}e$m=http://127.0.0.1:\$pp$m\""
done
for m in 1 2 3; do
    eval "c=\$cp$m; p=\$pp$m"
    etcd --name e$m --data-dir "$tmp/etcd$m" --listen-client-urls http://127.0.0.1:$c \
        --advertise-client-urls http://127.0.0.1:$c --listen-peer-urls http://127.0.0.1:$p \
        --initial-advertise-peer-urls http://127.0.0.1:$p --initial-cluster "$cluster" \
        --initial-cluster-state new --heartbeat-interval 50 --election-timeout 500 >"$tmp/etcd$m.out" 2>&1 &
    eval "epid$m=$!"
    etcds="$etcds $!"
done
endpoints="http://127.0.0.1:$cp1,http://127.0.0.1:$cp2,http://127.0.0.1:$cp3"
# bounded in time, not tries (each try may wait for its dial timeout)
t_etcd=$(( $(date +%s) + 30 ))
until ectl --endpoints "$endpoints" endpoint health >/dev/null 2>&1; do
    [ "$(date +%s)" -lt $t_etcd ] || fail "etcd did not start within 30 s: $(tail -3 "$tmp/etcd1.out") $(tail -3 "$tmp/etcd2.out") $(tail -3 "$tmp/etcd3.out")"
    sleep 0.1
done

# 2. three nodes of eight simulated GPUs (700 W each: 16.8 kW in all)
step=2
sim="--backend sim --gpus 8 --token-file $tmp/token --interval 0.1 --throughput-window 1"
n=0
for j in llama-8b-pretrain-h200 olmoe-1b-7b-pretrain-h200 llama-8b-pretrain-h100; do
    n=$((n + 1))
    start_agent "$tmp/agent$n.log" $sim --sim-job $j --seed $n --hostname node-$n --state-dir "$tmp/s$n" \
        || fail "agent $n"
    eval "ap$n=$port"
done
aurls="--agent http://127.0.0.1:$ap1 --agent http://127.0.0.1:$ap2 --agent http://127.0.0.1:$ap3"

# 3. controllers A then B, the same etcd and prefix
step=3
start_ctl() {  # NAME
    "$PFLEX" controller run $aurls --token-file "$tmp/token" --api-token-file "$tmp/token" \
        --period $period --etcd "$endpoints" --etcd-prefix /pflex/test --name "$1" \
        --listen 127.0.0.1:0 --port-file "$tmp/$1.port" --db "$tmp/$1.db" --log "$tmp/$1.log" &
    eval "pid_$1=$!"
    agents="$agents $!"
    i=0
    until [ -s "$tmp/$1.port" ]; do [ $i -lt 200 ] || fail "controller $1 did not start"; sleep 0.05; i=$((i + 1)); done
    eval "port_$1=$(cat "$tmp/$1.port")"
}
role() {  # NAME: its role as its API says it
    eval "p=\$port_$1"
    curl -s -m 2 "http://127.0.0.1:$p/v1/status" | jq -r '.standby.role // "none"'
}
wait_role() {  # NAME ROLE SECONDS
    i=0
    while [ "$(role "$1")" != "$2" ]; do
        [ $i -lt $(($3 * 10)) ] || fail "controller $1 is $(role "$1"), not $2, after $3 s"
        sleep 0.1; i=$((i + 1))
    done
}
start_ctl A
wait_role A leader 10
start_ctl B
wait_role B standby 10
port=$port_A
expect 200 GET /v1/status
fenceA=$(jq -r .standby.fence "$tmp/body")
# the role in /metrics too, promtool-clean
curl -s -m 5 "http://127.0.0.1:$port_B/metrics" >"$tmp/mb" || fail "B's /metrics"
promtool_ok "$tmp/mb" || fail "promtool rejects B's /metrics"
grep -q '^pflex_controller_leader 0$' "$tmp/mb" || fail "B's /metrics does not say it stands by"
curl -s -m 5 "http://127.0.0.1:$port_A/metrics" | grep -q "^pflex_controller_fence $fenceA\$" \
    || fail "A's /metrics lacks its fence $fenceA"

# the site meter: every agent's power and the fence it has seen, at once
# the site meter: each GPU at most at the limit in force when read (an
# agent's power sample is up to 0.1 s old, so a cut just made can still
# show the power from before it while another node's raise is in;
# controller_faults.sh counts alike)
meter() {
    curl -s -m 1 -Z "http://127.0.0.1:$ap1/v1/status" "http://127.0.0.1:$ap2/v1/status" \
        "http://127.0.0.1:$ap3/v1/status" 2>/dev/null \
        | jq -rs 'if length == 3 then "\([.[].gpus[] | [(.power_w // 0), (.limit_w // 1e9)] | min] | add) \([.[].fence // 0] | min)" else empty end' \
            2>/dev/null
}
( while [ ! -f "$tmp/meter.stop" ]; do m=$(meter); [ -n "$m" ] && echo "$(now) $m"; sleep 0.1; done \
    >"$tmp/meter.txt" ) &
agents="$agents $!"

# 4. the event, given to A alone; B follows it through etcd, and takes none
step=4
target=11000
ramp=3
sleep 2
# (a step of 5.5 kW in 3 s: faster than the default ramp rate, so confirmed)
expect 200 PUT /v1/target "{\"target\": \"${target}W,for=10m,ramp=${ramp}s\", \"id\": \"event\", \"confirm\": true}" "$TOKEN"
t_put=$(now)
port=$port_B
expect 409 PUT /v1/target '{"target": "6000W"}' "$TOKEN"
i=0
until curl -s -m 2 "http://127.0.0.1:$port_B/v1/status" | jq -e --argjson t $target '.target.id == "event" and .target.value == $t' \
        >/dev/null; do
    [ $i -lt 50 ] || fail "B does not follow A's target: $(curl -s "http://127.0.0.1:$port_B/v1/status" | jq -c .target)"
    sleep 0.1; i=$((i + 1))
done
sleep 9
# B's curves are A's: as many observations per job (within a period's)
curl -s -m 2 "http://127.0.0.1:$port_A/v1/status" | jq -c '[.jobs[] | {job, observations}] | sort_by(.job)' >"$tmp/obsA"
curl -s -m 2 "http://127.0.0.1:$port_B/v1/status" | jq -c '[.jobs[] | {job, observations}] | sort_by(.job)' >"$tmp/obsB"
jq -e -n --slurpfile a "$tmp/obsA" --slurpfile b "$tmp/obsB" \
    '($a[0] | length) == 3 and ([range(0; 3) as $k | ($a[0][$k].observations - $b[0][$k].observations) | fabs <= 2]
      | all) and ([$a[0][].observations] | add) >= 3' >/dev/null \
    || fail "B's learners are not A's: A $(cat "$tmp/obsA"), B $(cat "$tmp/obsB")"

# 5. A killed mid-event: B takes over
step=5
t_kill=$(now)
kill -KILL $pid_A
wait_role B leader 10
port=$port_B
expect 200 GET /v1/status
fenceB=$(jq -r .standby.fence "$tmp/body")
[ "$fenceB" -gt "$fenceA" ] || fail "B's fence $fenceB is not above A's $fenceA"
i=0
until [ "$(meter | awk '{ print $2 }')" = "$fenceB" ]; do
    [ $i -lt 100 ] || fail "the agents never saw B's fence $fenceB"
    sleep 0.1; i=$((i + 1))
done
# a push with A's stale token (to a cap no plan here sets: plans are in whole
# watts, this is 201.37 W): refused, nothing set, counted
port=$ap1
expect 409 PUT /v1/caps "{\"lease_s\": 5, \"fence\": $fenceA, \"caps\": [{\"gpu\": 0, \"cap_w\": 201.37}]}" "$TOKEN"
expect 200 GET /v1/status
jq -e '.gpus[0].limit_w != 201.37' "$tmp/body" >/dev/null || fail "a stale fence set a cap"
[ "$(metric pflex_fenced_pushes_total)" = 1 ] || fail "pflex_fenced_pushes_total is $(metric pflex_fenced_pushes_total)"
sleep 6

# 6. etcd's leader member killed: nothing changes
step=6
leader_id=$(ectl --endpoints "$endpoints" endpoint status -w json 2>/dev/null | jq -r '.[0].Status.leader')
victim=""
for m in 1 2 3; do
    eval "c=\$cp$m"
    id=$(ectl --endpoints "http://127.0.0.1:$c" endpoint status -w json 2>/dev/null | jq -r '.[0].Status.header.member_id')
    [ "$id" = "$leader_id" ] && victim=$m
done
[ -n "$victim" ] || fail "no etcd leader found"
eval "kill -KILL \$epid$victim"
t_etcd=$(now)
sleep 6
[ "$(role B)" = leader ] || fail "B lost the lead when one etcd member died"
grep -q "standing down" "$tmp/B.log" && fail "B stood down when one etcd member died"
[ "$(meter | awk '{ print $2 }')" = "$fenceB" ] || fail "the agents' fence changed when one etcd member died"
t_quorum=$(now)

# 7. a second member killed (no quorum): B stands down within its lease
step=7
for m in 1 2 3; do
    [ $m = $victim ] && continue
    eval "kill -KILL \$epid$m"
    break
done
i=0
until grep -q "standing down" "$tmp/B.log"; do
    [ $i -lt 60 ] || fail "B did not stand down 6 s after etcd lost its quorum"
    sleep 0.1; i=$((i + 1))
done
t_down=$(now)
[ "$(role B)" = standby ] || fail "B is $(role B) without etcd"
touch "$tmp/meter.stop"
sleep 0.3

# 8. the figures: from the end of the ramp (and a period to push) to the
step=8
# quorum's loss, every sample at or under the target
awk -v a="$t_put" -v r=$ramp -v p=$period -v b="$t_quorum" -v k="$t_kill" -v t=$target -v fb="$fenceB" '
    BEGIN { worst = -1e18 }
    $1 >= a + r + p && $1 < b { n++; if ($2 > t) over++; if ($2 - t > worst) worst = $2 - t }
    $1 >= k && $3 == fb && !tk { tk = $1 - k }
    END { printf "%d %d %.0f %.2f\n", n, over, worst, tk }' "$tmp/meter.txt" >"$tmp/fig"
read samples over worst takeover <"$tmp/fig"
[ "$samples" -ge 40 ] || fail "only $samples samples of the site's power"
[ "$over" -eq 0 ] || fail "$over of $samples samples over the $target W target (largest overshoot $worst W)"
ok=$(awk -v x="$takeover" -v p=$period 'BEGIN { print (x > 0 && x <= 2 * p) }')
[ "$ok" = 1 ] || fail "takeover took $takeover s, over two periods ($period s each)"
down=$(awk -v a="$t_down" -v b="$t_quorum" 'BEGIN { printf "%.1f", a - b }')
echo "takeover: ${takeover} s after SIGKILL of the leader ($(awk -v x="$takeover" -v p=$period 'BEGIN { printf "%.2f", x / p }') periods of $period s)"
echo "site power: $samples samples after the ramp, $over over the $target W target, largest overshoot ${worst} W (negative: the closest it came, under)"
echo "etcd: its leader member killed: no change; quorum lost: the leader stood down after $down s"
echo "ok: standby takeover, fencing, etcd member and quorum loss"
