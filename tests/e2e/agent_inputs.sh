#!/bin/sh
# pflex agent: inputs at the edges.  A token file that is a symlink to a
# regular file (how Kubernetes mounts a Secret) is accepted; a FIFO as the
# token file is refused at once instead of hanging start-up.  A fencing
# token past 2^53 sent as a decimal string is kept exact (status says it
# back to the digit; the same token pushes again, a lower one by one gets
# 409); as a JSON number it is refused 400 and changes nothing.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
command -v jq >/dev/null || { echo "jq missing"; exit 77; }

# a FIFO: refused within a second, naming what it is
mkfifo "$tmp/fifo" && chmod 600 "$tmp/fifo"
t0=$(date +%s%N)
timeout 5 "$PFLEX" agent --backend sim --gpus 1 --listen 127.0.0.1:0 --state-dir "$tmp/s0" \
    --token-file "$tmp/fifo" 2>"$tmp/fifo.log"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -ne 124 ] || fail "a FIFO as --token-file hung start-up"
[ $rc -ne 0 ] && [ $ms -lt 2000 ] || fail "a FIFO as --token-file: exit $rc after $ms ms"
grep -q 'fifo: a FIFO; want a regular file' "$tmp/fifo.log" || fail "FIFO refusal: $(cat "$tmp/fifo.log")"

# a symlink to the token (Kubernetes: ..data/token via a link): accepted
mkdir "$tmp/secret"
cp "$tmp/token" "$tmp/secret/real" && chmod 600 "$tmp/secret/real"
ln -s real "$tmp/secret/token"
start_agent "$tmp/a.log" --backend sim --gpus 2 --token-file "$tmp/secret/token" \
    --state-dir "$tmp/s" --interval 0.1 || fail "the agent refused a symlinked token file: $(cat "$tmp/a.log")"

# fences past 2^53, exact
big=9007199254740993
expect 400 PUT /v1/caps "{\"lease_s\": 5, \"fence\": $big, \"caps\": [{\"gpu\": 0, \"cap_w\": 450}]}" "$TOKEN"
grep -q 'above 2^53' "$tmp/body" || fail "a fence as a JSON number past 2^53: $(cat "$tmp/body")"
expect 200 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"$big\", \"caps\": [{\"gpu\": 0, \"cap_w\": 450}]}" "$TOKEN"
expect 200 GET /v1/status
[ "$(jq -r .fence "$tmp/body")" = "$big" ] || fail "fence kept as $(jq -r .fence "$tmp/body"), not $big"
# the same leader pushes again; one below it (…992, what a double makes of it) is fenced
expect 200 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"$big\", \"caps\": [{\"gpu\": 0, \"cap_w\": 440}]}" "$TOKEN"
expect 409 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"9007199254740992\", \"caps\": [{\"gpu\": 0, \"cap_w\": 430}]}" "$TOKEN"
expect 200 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"9007199254740994\", \"caps\": [{\"gpu\": 0, \"cap_w\": 420}]}" "$TOKEN"
expect 200 GET /v1/status
[ "$(jq -r '.fence + " " + (.gpus[0].limit_w | tostring)' "$tmp/body")" = "9007199254740994 420" ] \
    || fail "after the pushes: $(jq -c '[.fence, .gpus[0].limit_w]' "$tmp/body")"
# malformed fences: 400
expect 400 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"-1\", \"caps\": [{\"gpu\": 0, \"cap_w\": 420}]}" "$TOKEN"
expect 400 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"18446744073709551616\", \"caps\": [{\"gpu\": 0, \"cap_w\": 420}]}" "$TOKEN"
expect 400 PUT /v1/caps "{\"lease_s\": 5, \"fence\": 1.5, \"caps\": [{\"gpu\": 0, \"cap_w\": 420}]}" "$TOKEN"
# etcd rebuilt empty: its revisions start over (a new leader's fence 2,
# below the 60 the agent holds): 409 until the operator resets the fence
# with the token; then the new leader's pushes are taken
expect 200 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"18446744073709551615\", \"caps\": [{\"gpu\": 0, \"cap_w\": 420}]}" "$TOKEN"
expect 409 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"2\", \"caps\": [{\"gpu\": 0, \"cap_w\": 410}]}" "$TOKEN"
expect 401 DELETE /v1/fence
expect 401 DELETE /v1/fence "" wrong-token-0123456789
expect 200 DELETE /v1/fence "" "$TOKEN"
[ "$(jq -r .was "$tmp/body")" = 18446744073709551615 ] || fail "the reset's answer: $(cat "$tmp/body")"
grep -q 'fence 18446744073709551615 reset by' "$tmp/a.log" || fail "the reset is not logged"
expect 200 PUT /v1/caps "{\"lease_s\": 5, \"fence\": \"2\", \"caps\": [{\"gpu\": 0, \"cap_w\": 410}]}" "$TOKEN"
expect 200 GET /v1/status
[ "$(jq -r .fence "$tmp/body")" = 2 ] || fail "after the reset the fence is $(jq -r .fence "$tmp/body"), not 2"
echo "ok: agent inputs (symlinked token, FIFO refused, exact fences, fence reset)"
