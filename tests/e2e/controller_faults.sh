#!/bin/sh
# The controller's fault matrix, end to end on loopback: three `pflex agent
# --backend sim --gpus 8` nodes, a real Prometheus scraping them, `pflex
# vtn` serving an event of a fixed limit, and `pflex controller run`
# reading Prometheus and following the VTN, with the VTN, Prometheus and
# every agent reached through tests/slow_proxy (fast until told).  In turn,
# each for a few seconds with the site under the event's limit:
#   slow VTN           every answer one byte every 0.5 s
#   slow Prometheus    every answer 3 s late
#   slow agent         one agent's answers 3 s late
#   agent killed       kill -9 of one agent process
#   trickling clients  16 connections to the controller's API sending a
#                      byte every 0.5 s
# A meter reads every agent straight (not through the proxies, nor
# Prometheus, nor the controller) every 0.15 s: the site's power and every
# GPU's limit.  Asserted, in every case: no sample over the limit once the
# ramp is done (each GPU at most the limit in force when read, below), every limit either the original (700 W) or one the
# controller planned for that GPU (its audit), the controller's API
# answering throughout, and periods on time (none more than 2 periods
# after the one before).  Prints the matrix: samples, samples over the
# limit, the largest overshoot.  Bounded: 150 s.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 150 sh "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PFLEX=${PFLEX:-$root/build/pflex}
PROXY=${PFLEX_BUILD:-$root/build}/tests/slow_proxy
[ -x "$PROXY" ] || { echo "skip: $PROXY not built (make test-bins)"; exit 77; }
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }
. "$here/lib/prometheus.sh"
PROM_MAX_SECONDS=150
prom_init
tmp=$PROM_DIR
fail() {
    echo "FAIL: $*"
    for l in "$tmp"/phases.txt "$tmp"/ctl.log "$tmp"/vtn.log; do [ -f "$l" ] && { echo "--- $l"; grep -v ' period [0-9]*:' "$l" | tail -25; }; done
    [ -n "${PFLEX_E2E_KEEP:-}" ] && cp -r "$tmp" "$PFLEX_E2E_KEEP"
    exit 1
}
now() { date +%s.%N; }
TOKEN=faults-token-0123456789abcdef
printf '%s\n' "$TOKEN" >"$tmp/token"
printf 'vtn-secret-0123456789abcdef\n' >"$tmp/vtn.secret"
chmod 600 "$tmp/token" "$tmp/vtn.secret"
wait_file() { k=0; until [ -s "$1" ]; do [ $k -lt 200 ] || fail "$2 did not start"; sleep 0.05; k=$((k + 1)); done; }
# proxy NAME UPSTREAM_PORT MODE SECONDS: a slow_proxy; sets $ppid_NAME, $pport_NAME
proxy() {
    "$PROXY" proxy "$tmp/$1.pport" "$2" "$3" "$4" 150 2>>"$tmp/proxy.log" &
    eval "ppid_$1=$!"
    prom_track $!
    wait_file "$tmp/$1.pport" "proxy $1"
    eval "pport_$1=$(cat "$tmp/$1.pport")"
}

# 1. three nodes, each behind a proxy that can make it slow
prom_sim_agents llama-8b-pretrain-h200 olmoe-1b-7b-pretrain-h200 llama-8b-pretrain-h100 || fail "an agent did not start"
for i in 1 2 3; do
    eval "proxy a$i \$aport$i delay 3"
done
prom_start $PROM_AGENTS || fail "prometheus did not start"
prom_wait_value 'count(up == 1)' 3 20 || fail "prometheus does not scrape the three agents"
proxy prom "${PROM_URL##*:}" delay 3

# 2. the VTN's event: 10 kW from 4 s after the controller starts, for a
# minute and a half, ramped over 2 s by the controller (--vtn-ramp)
LIMIT=10000
RAMP=2
t0=$(( $(date +%s) + 5 ))
start=$(date -u -d "@$t0" +%Y-%m-%dT%H:%M:%SZ)
printf '[{"id":"faults","programID":"p","priority":1,"intervalPeriod":{"start":"%s","duration":"PT90S"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[%s]}]}]}]\n' \
    "$start" "$((LIMIT / 1000))" >"$tmp/events.json"
"$PFLEX" vtn --events "$tmp/events.json" --client-id site-f --secret-file "$tmp/vtn.secret" \
    --port-file "$tmp/vtn.port" 2>"$tmp/vtn.log" &
prom_track $!
wait_file "$tmp/vtn.port" "pflex vtn"
proxy vtn "$(cat "$tmp/vtn.port")" trickle 0.5

# 3. the controller, through the proxies
"$PFLEX" controller run --agent "http://127.0.0.1:$pport_a1" --agent "http://127.0.0.1:$pport_a2" \
    --agent "http://127.0.0.1:$pport_a3" --token-file "$tmp/token" --prometheus "http://127.0.0.1:$pport_prom" \
    --vtn "http://127.0.0.1:$pport_vtn" --vtn-client-id site-f --vtn-secret-file "$tmp/vtn.secret" \
    --vtn-ramp ${RAMP}s --period 0.5 --lease 2 --agent-max-w 5600 --db "$tmp/ctl.db" \
    --listen 127.0.0.1:0 --port-file "$tmp/c.port" --api-token-file "$tmp/token" --log "$tmp/ctl.log" &
cpid=$!
prom_track $cpid
wait_file "$tmp/c.port" "the controller"
cport=$(cat "$tmp/c.port")

# the meter: every agent straight, every 0.15 s: "TIME POWER GPU..." with
# each GPU as node/gpu=LIMIT:POWER (the agent's last sample, at most 0.1 s
# old); a node that is gone draws nothing
meter() {
    t=$(now)
    curl -s -m 1 -Z $(for i in 1 2 3; do eval "echo http://127.0.0.1:\$aport$i/v1/status"; done) 2>/dev/null |
        jq -s -r --arg t "$t" '"\($t) \([.[].gpus[].power_w // 0] | add // 0 | floor) " +
            ([.[] | .hostname as $n | .gpus[] | "\($n)/\(.gpu)=\(.limit_w):\(.power_w // 0)"] | join(" "))' 2>/dev/null
}
( while [ ! -f "$tmp/meter.stop" ]; do meter; sleep 0.15; done >"$tmp/meter.txt" ) &
prom_track $!
# the API, every 0.5 s: "TIME HTTP-STATUS"
( while [ ! -f "$tmp/meter.stop" ]; do
      echo "$(now) $(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$cport/v1/status")"
      sleep 0.5
  done >"$tmp/api.txt" ) &
prom_track $!
until_t() { while [ "$(awk -v a="$(now)" -v b="$1" 'BEGIN { print (a < b) }')" = 1 ]; do sleep 0.1; done; }

# 4. the faults, one after the other, each from (event start + ramp + 1 s
# of settling) on; "NAME FROM TO" into the phases file
t=$((t0 + RAMP + 2))
until_t $t
jq -e '.target.id == "faults/0"' <<EOF >/dev/null || fail "the controller does not follow the event: $(curl -s "http://127.0.0.1:$cport/v1/status" | jq -c .target)"
$(curl -s -m 2 "http://127.0.0.1:$cport/v1/status")
EOF
phase() {  # phase NAME SECONDS ON-COMMAND OFF-COMMAND
    a=$(now)
    eval "$3"
    sleep "$2"
    eval "$4"
    echo "$1 $a $(now)" >>"$tmp/phases.txt"
    sleep 1.5      # between faults: the site settles
}
echo "none $(now) $(awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 3 }')" >"$tmp/phases.txt"
sleep 3
phase "slow-VTN" 8 "kill -USR1 $ppid_vtn" "kill -USR2 $ppid_vtn"
phase "slow-Prometheus" 6 "kill -USR1 $ppid_prom" "kill -USR2 $ppid_prom"
phase "slow-agent" 6 "kill -USR1 $ppid_a1" "kill -USR2 $ppid_a1"
phase "trickling-clients" 6 \
    "\"$PROXY\" clients 127.0.0.1:$cport 16 0.5 30 & tpid=\$!; prom_track \$tpid" "kill \$tpid"
phase "agent-killed" 6 "kill -KILL $apid2" ":"
touch "$tmp/meter.stop"
sleep 0.5
kill -0 $cpid || fail "the controller died"
grep -q 'vtn: .*(targets kept)' "$tmp/ctl.log" || fail "the slow VTN left no trace in the log"
grep -q 'prometheus: .*(caps held)' "$tmp/ctl.log" || fail "the slow Prometheus left no trace in the log"

# 5. the matrix: per phase, the meter's samples, those over the limit, the
# largest overshoot; the limits against the plan; the API; the periods.
# A sample is the agents' last (every 0.1 s): one taken before a cut just
# made reads the power before it, while another GPU's raise is already in
# (the plan moves watts between nodes under a fixed limit); so each GPU
# counts at most the limit in force when read ("power"), and the raw sum
# is shown beside it ("raw").
"$PFLEX" controller history --db "$tmp/ctl.db" --what caps --limit 1000000 >"$tmp/caps.json" || fail "history caps"
jq -r '.caps[] | "\(.gpu) \(.cap_w)"' "$tmp/caps.json" | sort -u >"$tmp/planned.txt"
[ -s "$tmp/planned.txt" ] || fail "no caps in the audit"
awk -v L=$LIMIT '
    BEGIN { n = 0 }
    FILENAME == ARGV[1] { plan[$1 "=" $2] = 1; next }
    FILENAME == ARGV[2] { name[n] = $1; from[n] = $2; to[n] = $3; n++; next }
    {
        t = $1; raw = $2; ph = -1
        for (k = 0; k < n; k++) if (t >= from[k] && t < to[k]) ph = k
        if (ph < 0) next
        samples[ph]++
        p = 0; lim = 0
        for (f = 3; f <= NF; f++) {
            split($f, kv, "="); split(kv[2], lp, ":"); v = lp[1] + 0; w = lp[2] + 0
            p += w < v ? w : v; lim += v
            if (v != 700 && !((kv[1] "=" v) in plan)) { bad++; if (bad < 5) print "limit " $f " at " t " was never planned" > "/dev/stderr" }
        }
        if (p > L) { over[ph]++; if (p - L > worst[ph]) worst[ph] = p - L; print "over at " t ": " $0 > "/dev/stderr" }
        if (raw > L) { rover[ph]++; if (raw - L > rworst[ph]) rworst[ph] = raw - L }
        if (lim > maxlim[ph]) maxlim[ph] = lim
    }
    END {
        printf "%-18s %7s %5s %12s %8s %15s %14s\n", "fault", "samples", "over", "overshoot_W", "raw_over", "raw_overshoot_W", "max_sum_caps_W"
        for (k = 0; k < n; k++) {
            printf "%-18s %7d %5d %12.0f %8d %15.0f %14.0f\n", name[k], samples[k], over[k], worst[k], rover[k], rworst[k], maxlim[k]
            tot += over[k]; if (samples[k] < 5) few = 1
        }
        exit (tot > 0) * 1 + (bad > 0) * 2 + few * 4
    }' "$tmp/planned.txt" "$tmp/phases.txt" "$tmp/meter.txt" >"$tmp/matrix.txt" 2>"$tmp/limits.txt"
rc=$?
cat "$tmp/matrix.txt"
[ $((rc & 1)) = 0 ] || fail "site power over the ${LIMIT} W limit (matrix above): $(grep '^over' "$tmp/limits.txt" | head -3)"
[ $((rc & 2)) = 0 ] || fail "a limit neither planned nor original: $(grep -v '^over' "$tmp/limits.txt" | head -3)"
[ $((rc & 4)) = 0 ] || fail "a phase with fewer than 5 samples of the meter"
# the API answered (200) to every probe from the start of the faults on
a0=$(awk 'NR == 1 { print $2 }' "$tmp/phases.txt")
awk -v a="$a0" '$1 >= a && $2 != 200 { print; bad++ } END { exit bad > 0 }' "$tmp/api.txt" >"$tmp/api_bad.txt" \
    || fail "the controller's API did not answer: $(head -3 "$tmp/api_bad.txt")"
napi=$(awk -v a="$a0" '$1 >= a' "$tmp/api.txt" | wc -l)
# the periods kept their pace: no gap over 2 periods between period lines
gap=$(awk -v a="$a0" '$2 == "period" {
        split($1, d, "T"); split(d[2], h, ":"); s = h[1] * 3600 + h[2] * 60 + h[3]
        if (prev && s - prev > g) g = s - prev; prev = s } END { printf "%.2f\n", g }' "$tmp/ctl.log")
awk -v g="$gap" 'BEGIN { exit !(g <= 1.0) }' || fail "a gap of $gap s between periods of 0.5 s"
echo "API: $napi probes during the faults, all answered 200; the longest gap between periods: $gap s (period 0.5 s)"
echo ok
