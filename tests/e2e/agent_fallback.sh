#!/bin/sh
# pflex agent --backend sim: a lease with a fallback.  When the lease ends
# before the fallback's end (a grid event still in force), the GPU holds the
# fallback until then, and only then goes back to its original limit; a
# lease without one restores at its end; a fallback given without its end,
# or outside the GPU's range, is refused and nothing changes; a new cap
# replaces the lease and its fallback; SIGTERM restores every GPU, fallback
# or not.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
command -v jq >/dev/null || { echo "jq missing"; exit 77; }

start_agent "$tmp/a.log" --backend sim --gpus 4 --token-file "$tmp/token" --state-dir "$tmp/s" \
    --interval 0.1 || fail "agent"
limit() { curl -s -m 5 "http://127.0.0.1:$port/v1/status" | jq -r ".gpus[$1].limit_w"; }

# refused, nothing set: a fallback without its end, an end without a
# fallback, a fallback outside the range
now=$(date +%s)
expect 400 PUT /v1/caps "{\"caps\": [{\"gpu\": 0, \"cap_w\": 450, \"fallback_w\": 400}], \"lease_s\": 5}" "$TOKEN"
grep -q 'fallback_until' "$tmp/body" || fail "the refusal does not name fallback_until: $(cat "$tmp/body")"
expect 400 PUT /v1/caps "{\"caps\": [{\"gpu\": 0, \"cap_w\": 450, \"fallback_until\": $now}], \"lease_s\": 5}" "$TOKEN"
expect 400 PUT /v1/caps "{\"caps\": [{\"gpu\": 0, \"cap_w\": 450, \"fallback_w\": 100, \"fallback_until\": $((now + 60))}], \"lease_s\": 5}" "$TOKEN"
grep -q 'fallback 100 W is outside' "$tmp/body" || fail "range refusal: $(cat "$tmp/body")"
[ "$(limit 0)" = 700 ] || fail "a refused request changed GPU 0"

# GPU 0: a 1 s lease on 450 W, falling back to 400 W until 4 s from now
# (the request's fallback); GPU 1: the same lease, no fallback; GPU 2: a
# fallback whose end has passed (the lapse restores)
now=$(date +%s)
body="{\"lease_s\": 1, \"caps\": [{\"gpu\": 0, \"cap_w\": 450, \"fallback_w\": 400, \"fallback_until\": $((now + 4))},
        {\"gpu\": 1, \"cap_w\": 450}, {\"gpu\": 2, \"cap_w\": 450, \"fallback_w\": 400, \"fallback_until\": $((now - 1))}]}"
expect 200 PUT /v1/caps "$body" "$TOKEN"
jq -e '.applied[0].lease.fallback_w == 400 and .applied[0].lease.fallback == false' "$tmp/body" >/dev/null \
    || fail "the answer does not show the fallback: $(jq -c '.applied[0].lease' "$tmp/body")"
sleep 1.6
[ "$(limit 0)" = 400 ] || fail "GPU 0 at $(limit 0) W after its lease, not its fallback 400 W"
[ "$(limit 1)" = 700 ] || fail "GPU 1 (no fallback) at $(limit 1) W after its lease, not 700 W"
[ "$(limit 2)" = 700 ] || fail "GPU 2 (a fallback already over) at $(limit 2) W, not 700 W"
curl -s -m 5 "http://127.0.0.1:$port/v1/status" | jq -e '.gpus[0].lease.fallback == true' >/dev/null \
    || fail "GPU 0's lease is not shown as its fallback"
grep -q 'GPU 0: the lease on 450 W ended during an event: holding its fallback 400 W' "$tmp/a.log" \
    || fail "the fallback is not logged"
# held until its end, then the original
i=0
while [ "$(date +%s)" -lt $((now + 3)) ]; do
    [ "$(limit 0)" = 400 ] || fail "GPU 0 left its fallback early: $(limit 0) W"
    sleep 0.3
done
i=0
until [ "$(limit 0)" = 700 ]; do
    i=$((i + 1)); [ $i -lt 40 ] || fail "GPU 0 still at $(limit 0) W after its fallback's end"
    sleep 0.1
done
grep -q "GPU 0: back to its original 700 W (the event's fallback of 400 W ended)" "$tmp/a.log" \
    || fail "the fallback's end is not logged"

# a new cap replaces the lease and its fallback
now=$(date +%s)
expect 200 PUT /v1/caps "{\"lease_s\": 1, \"caps\": [{\"gpu\": 3, \"cap_w\": 450, \"fallback_w\": 400, \"fallback_until\": $((now + 30))}]}" "$TOKEN"
expect 200 PUT /v1/caps "{\"lease_s\": 1, \"caps\": [{\"gpu\": 3, \"cap_w\": 500}]}" "$TOKEN"
sleep 1.6
[ "$(limit 3)" = 700 ] || fail "GPU 3 kept a replaced fallback: $(limit 3) W"

# SIGTERM during a fallback: every GPU back to its original
now=$(date +%s)
expect 200 PUT /v1/caps "{\"lease_s\": 1, \"caps\": [{\"gpu\": 0, \"cap_w\": 450, \"fallback_w\": 400, \"fallback_until\": $((now + 30))}]}" "$TOKEN"
sleep 1.6
[ "$(limit 0)" = 400 ] || fail "GPU 0 not on its fallback before SIGTERM"
kill -TERM $apid
wait $apid; rc=$?
[ $rc = 0 ] || fail "agent exit $rc on SIGTERM"
agents=""
[ ! -e "$tmp/s/sim-0.state" ] || fail "SIGTERM left GPU 0's state file: not restored"
grep -q 'GPU 0: back to its original 700 W (the agent stops)' "$tmp/a.log" || fail "SIGTERM did not restore GPU 0"
echo "agent_fallback: ok"
