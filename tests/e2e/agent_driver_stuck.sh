#!/bin/sh
# pflex agent --backend nvml: one NVML call that blocks for 20 s (the
# fake's FAKE_NVML_BLOCK) must not freeze the API.  While the driver
# thread is stuck in it, /v1/status and /metrics answer within a second
# with the last reading (read_at older than the hang), a PUT is answered
# 503 "the GPU driver is busy" within a second and changes nothing, and
# /healthz answers; once the call returns, the agent reads again and caps
# are taken as before.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 90 sh "$0" "$@"
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
command -v jq >/dev/null || { echo "jq missing"; exit 77; }
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
export FAKE_NVML_BLOCK="power/0:20:$tmp/hang"
unset FAKE_NVML_FAIL FAKE_NVML_RANGE
limit() { sed -n "s/^gpu$1.limit_mw=//p" "$FAKE_NVML_STATE"; }

start_agent "$tmp/a.log" --backend nvml --token-file "$tmp/token" --interval 0.1 \
    || fail "the agent did not start"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 500}], "lease_s": 60}' "$TOKEN"

# the hang: the next read of GPU 0's power blocks for 20 s
touch "$tmp/hang"
i=0
while [ -e "$tmp/hang" ]; do
    [ $i -lt 100 ] || fail "the fake's hang never began"
    sleep 0.05; i=$((i + 1))
done
hung_at=$(date +%s.%N)
sleep 1.5   # past the point where the agent takes the driver as stuck

# timed METHOD PATH [BODY]: "STATUS SECONDS"
timed() {
    if [ $# -ge 3 ]; then
        curl -s -m 10 -o "$tmp/body" -w '%{http_code} %{time_total}' -X "$1" \
            -H "Authorization: Bearer $TOKEN" --data-binary "$3" "http://127.0.0.1:$port$2"
    else
        curl -s -m 10 -o "$tmp/body" -w '%{http_code} %{time_total}' "http://127.0.0.1:$port$2"
    fi
}
within_1s() { awk -v t="$1" 'BEGIN { exit !(t < 1.0) }'; }

set -- $(timed GET /v1/status)
[ "$1" = 200 ] && within_1s "$2" || fail "GET /v1/status while the driver hangs: HTTP $1 after $2 s"
took="status $2 s"
read_at=$(jq -r .read_at "$tmp/body")
awk -v r="$read_at" -v h="$hung_at" 'BEGIN { exit !(r <= h) }' \
    || fail "status read_at $read_at is not from before the hang ($hung_at)"
jq -e '.gpus[1].lease.cap_w == 500' "$tmp/body" >/dev/null || fail "the last reading lost the lease"
set -- $(timed GET /metrics)
[ "$1" = 200 ] && within_1s "$2" || fail "GET /metrics while the driver hangs: HTTP $1 after $2 s"
took="$took, metrics $2 s"
grep -q '^pflex_agent_read_timestamp_seconds ' "$tmp/body" || fail "/metrics lacks its read time"
set -- $(timed PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 400}], "lease_s": 60}')
[ "$1" = 503 ] && within_1s "$2" || fail "PUT while the driver hangs: HTTP $1 after $2 s: $(cat "$tmp/body")"
took="$took, PUT (503) $2 s"
grep -q 'the GPU driver is busy' "$tmp/body" || fail "the 503 does not say why: $(cat "$tmp/body")"
[ "$(limit 1)" = 500000 ] || fail "a refused PUT changed GPU 1 to $(limit 1) mW"
set -- $(timed GET /healthz)
[ "$1" = 200 ] && within_1s "$2" || fail "GET /healthz while the driver hangs: HTTP $1 after $2 s"
grep -q 'the GPU driver has not answered for' "$tmp/a.log" || fail "the hang is not logged"

# the call returns: fresh readings, caps taken again
i=0
until [ "$(curl -s -m 5 "http://127.0.0.1:$port/v1/status" | jq -r ".read_at > $hung_at + 15")" = true ]; do
    [ $i -lt 300 ] || fail "the agent never read the GPUs again after the hang"
    sleep 0.1; i=$((i + 1))
done
expect 200 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 400}], "lease_s": 60}' "$TOKEN"
[ "$(limit 1)" = 400000 ] || fail "GPU 1 at $(limit 1) mW after the hang, not 400000"
echo "ok: a 20 s NVML hang: $took"
