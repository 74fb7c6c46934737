#!/bin/sh
# pflex controller against real `pflex agent --backend sim` processes: the
# controller reads each agent's /v1/status (GPUs, ranges, job map, job
# throughput from the jobs' progress reports), pushes caps with PUT
# /v1/caps, the caps take, the site's measured power comes under the
# target, the jobs' observations reach the audit, and when the controller
# stops mid-event the GPUs hold their fallbacks (the site under the target)
# once the leases run out, and go back to the agents' originals at the
# event's end.
# Then the controller's own API (PUT /v1/target with and without the token,
# out-of-range targets, /v1/status, /metrics through promtool) with a job
# map file in place of the agents' maps; --hostname of the agent.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
command -v jq >/dev/null || { echo "jq missing"; exit 77; }

sim="--backend sim --gpus 8 --token-file $tmp/token --interval 0.1 --throughput-window 1"
start_agent "$tmp/a.log" $sim --sim-job llama-8b-pretrain-h200 --hostname node-a --state-dir "$tmp/sa" || fail "agent a"
pa=$port
start_agent "$tmp/b.log" $sim --sim-job olmoe-1b-7b-pretrain-h200 --seed 2 --hostname node-b --state-dir "$tmp/sb" || fail "agent b"
pb=$port
# --hostname: two sim agents on one machine read as two nodes
[ "$(curl -s -m 5 "http://127.0.0.1:$pb/v1/status" | jq -r .hostname)" = node-b ] || fail "--hostname not in /v1/status"
curl -s -m 5 "http://127.0.0.1:$pb/metrics" | grep -q '^DCGM_FI_DEV_POWER_USAGE{gpu="0",.*Hostname="node-b"}' \
    || fail "--hostname not the Hostname label of /metrics"

# the agents' own view before: every GPU at its original 700 W
for p in $pa $pb; do
    curl -s -m 5 "http://127.0.0.1:$p/v1/status" | jq -e '[.gpus[].limit_w] | all(. == 700)' >/dev/null \
        || fail "agent $p does not start at 700 W"
done

target=7000
# the event ends 16 s from now, some 7 s after the controller stops
event_end=$(($(date +%s) + 16))
"$PFLEX" controller run --agent "http://127.0.0.1:$pa" --agent "http://127.0.0.1:$pb" \
    --token-file "$tmp/token" --target "${target}W,end=@$event_end,confirm=yes" --period 0.4 --lease 2 --periods 20 \
    --db "$tmp/ctl.db" --log "$tmp/ctl.log" || fail "controller run: exit $?"

# every GPU of both agents now holds a lease from the controller
for p in $pa $pb; do
    curl -s -m 5 "http://127.0.0.1:$p/v1/status" >"$tmp/st" || fail "status of $p"
    jq -e '[.gpus[] | .lease != null and .limit_w < 700] | all' "$tmp/st" >/dev/null \
        || fail "agent $p: not every GPU capped: $(jq -c '[.gpus[].limit_w]' "$tmp/st")"
done
# the controller saw two agents, 16 GPUs and both jobs
grep -q "16 GPUs, 2 jobs, 0 agents down" "$tmp/ctl.log" || fail "the controller did not see both agents"
# after the first periods (a GPU's reading is a mean over its last second,
# as NVML's is: 1.6 s after the first caps), measured power is at or under
# the target in every period
awk -v t=$target '$2 == "period" { n++; for (i = 1; i <= NF; i++) if ($i == "measured") m = $(i + 1) + 0;
                              if (n > 4 && m > t) { print "period " n ": " m " W over " t; bad = 1 } }
                  END { exit bad || n != 20 }' "$tmp/ctl.log" || fail "measured power over the target"
# the jobs' throughput reached the learner: observations in the audit
"$PFLEX" controller history --db "$tmp/ctl.db" --what observations >"$tmp/h.json" || fail "history"
for j in llama-8b-pretrain-h200 olmoe-1b-7b-pretrain-h200; do
    n=$(jq --arg j "$j" '[.observations[] | select(.job == $j and .throughput > 0)] | length' "$tmp/h.json")
    [ "$n" -ge 3 ] || fail "job $j: $n observations with throughput in the audit"
done
# the leases run out (2 s), but the event goes on: every GPU holds its
# fallback, and the site its target, until the event's end
sleep 2.5
[ "$(date +%s)" -lt $event_end ] || fail "the event ended before the leases (a slow machine?)"
w=0
for p in $pa $pb; do
    curl -s -m 5 "http://127.0.0.1:$p/v1/status" >"$tmp/st" || fail "status of $p"
    jq -e '[.gpus[] | .lease.fallback == true] | all' "$tmp/st" >/dev/null \
        || fail "agent $p: not every GPU on its fallback: $(jq -c '[.gpus[].lease]' "$tmp/st")"
    w=$((w + $(jq '[.gpus[].limit_w] | add | floor' "$tmp/st")))
done
[ $w -le $target ] || fail "the fallbacks sum to $w W, over the target $target W"
# then the event ends: every GPU back at 700 W
while [ "$(date +%s)" -lt $event_end ]; do sleep 0.2; done
i=0
while :; do
    ok=1
    for p in $pa $pb; do
        curl -s -m 5 "http://127.0.0.1:$p/v1/status" | jq -e '[.gpus[] | .limit_w == 700 and .lease == null] | all' \
            >/dev/null || ok=0
    done
    [ $ok = 1 ] && break
    [ $i -lt 100 ] || fail "caps not restored 10 s after the controller stopped"
    sleep 0.1; i=$((i + 1))
done
# The controller's own API: PUT /v1/target with the token, 401 without or
# with a wrong one and 400 out of range (nothing changed), /v1/status, and
# /metrics through promtool; a job map file in place of the agents' maps.
printf 'job,name,host,gpu\n' >"$tmp/map.csv"
for g in 0 1 2 3 4 5 6 7; do printf 'llama-8b-pretrain-h200,,node-a,%s\nolmoe-1b-7b-pretrain-h200,,node-b,%s\n' $g $g; done >>"$tmp/map.csv"
"$PFLEX" controller run --agent "http://127.0.0.1:$pa" --agent "http://127.0.0.1:$pb" \
    --token-file "$tmp/token" --api-token-file "$tmp/token" --listen 127.0.0.1:0 --port-file "$tmp/cport" \
    --job-map "$tmp/map.csv" --period 0.3 --lease 2 --log "$tmp/api.log" &
cpid=$!
agents="$agents $cpid"
i=0
until [ -s "$tmp/cport" ]; do [ $i -lt 100 ] || fail "controller API did not start"; sleep 0.05; i=$((i + 1)); done
port=$(cat "$tmp/cport")
expect 401 PUT /v1/target '{"target": "5000W"}'
expect 401 PUT /v1/target '{"target": "5000W"}' wrong-token-0123456789
expect 400 PUT /v1/target '{"target": "-5W"}' "$TOKEN"
expect 400 PUT /v1/target '{"target": "2x"}' "$TOKEN"
expect 400 PUT /v1/target '{"target": "5000W,ramp=3d"}' "$TOKEN"
expect 400 PUT /v1/target '{"watts": 5000}' "$TOKEN"
expect 200 GET /v1/status
jq -e '.target == null and .limit_w == null' "$tmp/body" >/dev/null || fail "a refused target changed something: $(cat "$tmp/body")"
# a step far faster than the site's ramp rate, and a level under its
# floor (16 GPUs at 200 W): refused unless confirmed, and logged
i=0
until expect 200 GET /v1/status && jq -e '.floor_w != null' "$tmp/body" >/dev/null; do
    [ $i -lt 50 ] || fail "no period ran: $(cat "$tmp/body")"; sleep 0.1; i=$((i + 1)); done
expect 409 PUT /v1/target '{"target": "1W"}' "$TOKEN"
grep -q "floor" "$tmp/body" || fail "1 W: the refusal does not say why: $(cat "$tmp/body")"
# (4 kW: a step of more than a period's 67 W from whatever the GPUs draw,
# their fallbacks of the run above or their originals)
expect 409 PUT /v1/target '{"target": "4000W,for=1m", "id": "api-test"}' "$TOKEN"
grep -q "ramp=" "$tmp/body" || fail "4 kW at once: the refusal does not say why: $(cat "$tmp/body")"
expect 200 GET /v1/status
jq -e '.target == null' "$tmp/body" >/dev/null || fail "a refused target is in force: $(cat "$tmp/body")"
grep -q "api: refused PUT /v1/target from 127.0.0.1 (HTTP 409): .*confirm=yes" "$tmp/api.log" \
    || fail "the refusal of an unconfirmed step is not logged"
expect 200 PUT /v1/target '{"target": "6000W,for=1m", "id": "api-test", "confirm": true}' "$TOKEN"
i=0
while :; do
    expect 200 GET /v1/status
    jq -e '.limit_w == 6000 and .site_power_w <= 6000 and (.jobs | length) == 2' "$tmp/body" >/dev/null && break
    [ $i -lt 50 ] || fail "PUT /v1/target not followed: $(cat "$tmp/body")"
    sleep 0.2; i=$((i + 1))
done
jq -e '.target.id == "api-test" and .target.source == "api" and ([.jobs[].gpus] == [8, 8])' "$tmp/body" >/dev/null \
    || fail "status: $(cat "$tmp/body")"
curl -s -m 5 "http://127.0.0.1:$port/metrics" >"$tmp/cm" || fail "GET /metrics"
promtool_ok "$tmp/cm" || fail "promtool rejects the controller's /metrics"
for m in pflex_controller_target_watts pflex_controller_site_power_watts pflex_controller_headroom_watts; do
    awk -v m=$m '$1 == m { f = 1 } END { exit !f }' "$tmp/cm" || fail "/metrics lacks $m"
done
grep -q '^pflex_controller_job_cap_watts{job="olmoe-1b-7b-pretrain-h200"} ' "$tmp/cm" || fail "/metrics lacks a job cap"
grep -q '^pflex_controller_job_floor_breached{job="llama-8b-pretrain-h200"} 0$' "$tmp/cm" || fail "/metrics lacks the floor state"
grep -q "^[0-9-]*T[0-9:.]*Z api: refused PUT /v1/target from 127.0.0.1: wrong token" "$tmp/api.log" \
    || fail "a wrong token is not logged"
grep -q "api: refused PUT /v1/target from 127.0.0.1 (HTTP 400): .*(body '{\"target\": \"-5W\"}')" "$tmp/api.log" \
    || fail "a refused write is not logged with its body"
expect 200 DELETE /v1/target "" "$TOKEN"
grep -q "api: DELETE /v1/target from 127.0.0.1: 1 targets withdrawn" "$tmp/api.log" || fail "a DELETE is not logged"
! grep -Ev '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z ' "$tmp/api.log" "$tmp/ctl.log" \
    || fail "log lines without an ISO 8601 UTC timestamp"
kill -TERM $cpid; wait $cpid || fail "controller exit $?"

echo "ok: controller with two real agents: caps pushed and taken, power under ${target} W, leases restored"
