#!/bin/sh
# pflex agent --backend nvml against the fake NVML library: what the agent
# sets is what the fake's state file (the "hardware") shows, and every way
# of ending leaves the original limits there: lease expiry, DELETE,
# SIGTERM, SIGPIPE (ignored), SIGKILL then a restart.  A cap a driver
# reload wipes is set again.  One owner per GPU:
# a second agent, or a sweep, on the same GPUs is refused.  The device's
# real range is what caps are checked against; a GPU lost mid-run is
# reported and the other keeps working.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 240 sh "$0" "$@"
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL FAKE_NVML_RANGE
nv="--backend nvml --token-file $tmp/token --interval 0.1"
limit() { sed -n "s/^gpu$1.limit_mw=//p" "$FAKE_NVML_STATE"; }
wait_limit() {  # GPU mW SECONDS
    i=0
    until [ "$(limit "$1")" = "$2" ]; do
        [ $i -lt $(($3 * 20)) ] || fail "GPU $1 at $(limit "$1") mW, never $2 in $3 s"
        sleep 0.05; i=$((i + 1))
    done
}
uuid0=GPU-fa4e0000-0000-4000-8000-000000000000

# The device's range decides: GPU 0 allows 150-600 W here.
printf 'gpu0.min_mw=150000\ngpu0.max_mw=600000\ngpu0.default_mw=600000\ngpu0.limit_mw=600000\n' \
    >"$FAKE_NVML_STATE"
start_agent "$tmp/a.log" $nv || fail "the agent did not start"
curl -s -m 10 "http://127.0.0.1:$port/metrics" >"$tmp/m" || fail "GET /metrics"
grep -q "^DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-fa4e0000-0000-4000-8000-000000000001\",device=\"nvidia1\",modelName=\"NVIDIA H200\"" "$tmp/m" \
    || fail "no DCGM_FI_DEV_POWER_USAGE for GPU 1"
promtool_ok "$tmp/m" || fail "promtool check metrics rejects /metrics"
[ "$(metric pflex_gpu_limit_max_watts 0)" = 600 ] || fail "GPU 0's range is not the device's"
expect 400 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 650}], "lease_s": 5}' "$TOKEN"
grep -q 'GPU 0: cap 650 W is outside the allowed range 150-600 W' "$tmp/body" || fail "range: $(cat "$tmp/body")"
expect 401 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 300}], "lease_s": 5}'
[ "$(limit 0)" = 600000 ] && [ "$(limit 1)" = 700000 ] || fail "a refused request changed a limit"

# A lease expires: the device is back at its original limit.
expect 200 PUT /v1/caps "{\"caps\": [{\"gpu\": \"$uuid0\", \"cap_w\": 300}, {\"gpu\": 1, \"cap_w\": 450}], \"lease_s\": 1}" "$TOKEN"
[ "$(limit 0)" = 300000 ] && [ "$(limit 1)" = 450000 ] || fail "the caps did not reach the device"
grep -q '"gpu": 1, .*"enforced_w": 450.0' "$tmp/body" || fail "the enforced limit is not read back"
wait_limit 0 600000 5
wait_limit 1 700000 5

# An agent and a sweep on the same GPU: the sweep refuses.
"$PFLEX" sweep --backend nvml --power-only --caps 400 --window 0.05 --settle 0 >"$tmp/sweep.csv" \
    2>"$tmp/sweep.err"
rc=$?
[ $rc -eq 1 ] || fail "a sweep beside the agent: exit $rc"
grep -q "held by another pflex process (pflex agent, pid $apid" "$tmp/sweep.err" || fail "the sweep does not name the agent"
# ... and two agents: the second refuses.
"$PFLEX" agent $nv --listen 127.0.0.1:0 2>"$tmp/second.log"
rc=$?
[ $rc -eq 1 ] || fail "a second agent: exit $rc"
grep -q "held by another pflex process (pflex agent, pid $apid" "$tmp/second.log" || fail "the second agent does not name the first"

# SIGPIPE: ignored; SIGTERM: restores and exits 0.
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 250}, {"gpu": 1, "cap_w": 250}], "lease_s": 60}' "$TOKEN"
kill -PIPE $apid
sleep 0.2
expect 200 GET /v1/status
[ "$(limit 1)" = 250000 ] || fail "SIGPIPE changed the caps"
kill -TERM $apid
wait $apid
rc=$?
[ $rc -eq 0 ] || fail "SIGTERM: exit $rc"
[ "$(limit 0)" = 600000 ] && [ "$(limit 1)" = 700000 ] || fail "SIGTERM left $(limit 0) $(limit 1)"

# SIGKILL with caps set; the next start restores them first.
start_agent "$tmp/a.log" $nv || fail "the agent did not restart"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 350}, {"gpu": 1, "cap_w": 350}], "lease_s": 60}' "$TOKEN"
kill -KILL $apid
wait $apid 2>/dev/null
[ "$(limit 1)" = 350000 ] || fail "SIGKILL: the fake should still be capped"
start_agent "$tmp/a.log" $nv || fail "the agent did not start after SIGKILL"
[ "$(limit 0)" = 600000 ] && [ "$(limit 1)" = 700000 ] || fail "after the restart: $(limit 0) $(limit 1)"
grep -q "GPU 1 (GPU-fa4e0000-0000-4000-8000-000000000001): pflex agent (pid [0-9]*) ended without restoring the power limit (350 W found); restored the original 700 W" \
    "$tmp/a.log" || fail "the recovery is not reported"
# A driver reload resets a leased cap behind the agent's back: it notices
# within a sample and sets the cap again.
expect 200 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 420}], "lease_s": 60}' "$TOKEN"
sed 's/^gpu1.limit_mw=.*/gpu1.limit_mw=700000/' "$FAKE_NVML_STATE" >"$tmp/reload" && mv "$tmp/reload" "$FAKE_NVML_STATE"
wait_limit 1 420000 5
grep -q 'GPU 1: the limit is 700 W, not the leased 420 W' "$tmp/a.log" || fail "the lost cap is not reported"
[ "$(metric pflex_lease_reapplied_total 1)" = 1 ] || fail "the re-application is not counted"
# SIGKILL again; --restore-only (the unit's ExecStopPost) puts the limits
# back without serving.
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 333}], "lease_s": 60}' "$TOKEN"
kill -KILL $apid
wait $apid 2>/dev/null
[ "$(limit 0)" = 333000 ] || fail "SIGKILL: the fake should still be capped"
"$PFLEX" agent --backend nvml --restore-only 2>"$tmp/restore.log" || fail "--restore-only failed"
[ "$(limit 0)" = 600000 ] || fail "--restore-only left GPU 0 at $(limit 0) mW"
grep -q 'restored the original 600 W it had saved' "$tmp/restore.log" || fail "--restore-only does not say what it restored"
[ -z "$(ls "$PFLEX_STATE_DIR"/*.state 2>/dev/null)" ] || fail "--restore-only left a state file"
start_agent "$tmp/a.log" $nv || fail "the agent did not restart"
# DELETE restores now.
expect 200 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 500}], "lease_s": 60}' "$TOKEN"
expect 200 DELETE '/v1/caps?gpu=1' "" "$TOKEN"
[ "$(limit 1)" = 700000 ] || fail "DELETE did not restore GPU 1"
kill -TERM $apid; wait $apid

# Restores that fail for a while (8 sets of GPU 1 after its cap): the
# lease's restore is retried later, less and less often, while GPU 0 is
# served as usual, until it takes.
FAKE_NVML_FAIL=set_limit/1:UNKNOWN:1:8 start_agent "$tmp/a.log" $nv || fail "the agent did not start"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 380}], "lease_s": 0.5}' "$TOKEN"
i=0
until grep -q 'GPU 1: the lease ended but the restore failed; next try in 1 s' "$tmp/a.log"; do
    [ $i -lt 100 ] || fail "the failed restore is not retried"
    sleep 0.05; i=$((i + 1))
done
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 500}], "lease_s": 60}' "$TOKEN"
[ "$(limit 0)" = 500000 ] || fail "GPU 0 not served while GPU 1's restore is retried"
wait_limit 1 700000 10
kill -TERM $apid; wait $apid
[ "$(limit 0)" = 600000 ] || fail "GPU 0 not restored at the end"

# GPU 1 falls off the bus mid-run: reported, GPU 0 keeps working, and
# the agent still stops cleanly.
FAKE_NVML_FAIL=any/1:GPU_IS_LOST:40 start_agent "$tmp/a.log" $nv || fail "the agent did not start"
wait_metric pflex_gpu_up 1 0 5
[ "$(metric pflex_gpu_up 0)" = 1 ] || fail "GPU 0 reported down too"
expect 200 GET /v1/status
grep -q '"gpu": 1, .*"ok": false, "error": "GPU 1 (NVIDIA H200): [^"]*GPU is lost' "$tmp/body" \
    || fail "status does not report GPU 1 lost"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 400}], "lease_s": 1}' "$TOKEN"
[ "$(limit 0)" = 400000 ] || fail "GPU 0 does not take a cap after GPU 1 was lost"
wait_limit 0 600000 5
kill -TERM $apid; wait $apid
echo ok
