#!/bin/sh
# pflex agent --backend nvml stopped during a grid event (a lease with a
# fallback whose end is ahead), against the fake NVML (its state file is
# the hardware, which outlives the agent):
#  1. restarted at once: the sum of the GPUs' limits, sampled every 20 ms
#     through the stop and the start, never exceeds the plan's (the caps'
#     sum) before the event's end; the new agent holds the fallbacks as
#     leases, and every GPU is at its original limit one period after the
#     event's end;
#  2. stopped for good: the GPUs stay at their fallbacks (never back at the
#     originals mid-event), and the restore the stop armed (a detached
#     pflex agent --restore-only --wait --at) puts every GPU back at its
#     original limit by the event's end plus one period.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 90 sh "$0" "$@"
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
command -v jq >/dev/null || { echo "jq missing"; exit 77; }
tmp=$(mktemp -d)
sampler=""
trap 'stop_agents; [ -n "$sampler" ] && kill $sampler 2>/dev/null; stop_helpers; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL FAKE_NVML_RANGE FAKE_NVML_BLOCK
nv="--backend nvml --token-file $tmp/token --interval 0.1"
period=1    # the controller's period the test allows for the restore

# the detached restore helpers the stops armed (their own sessions): by pid
stop_helpers() {
    for p in $(pgrep -f "restore-only --wait --at .* --state-dir $PFLEX_STATE_DIR" 2>/dev/null); do
        kill $p 2>/dev/null
    done
}
sum_mw() { awk -F= '/^gpu[0-9]+\.limit_mw=/ { s += $2 } END { print s + 0 }' "$FAKE_NVML_STATE"; }
# sample: "unix_ms sum_mw" as often as it can (20 ms apart at most) into $1
# until killed; the time is
# taken after the reading, so that a reading stamped before a time was
# read before it
sample() {
    while :; do
        s=$(sum_mw)
        echo "$(($(date +%s%N) / 1000000)) $s"
        sleep 0.02
    done >"$1"
}
# the caps (450 + 500 W = 950 W) and fallbacks (400 + 350 W) of an event
# that ends at $1; lease 2 s
push_event() {
    expect 200 PUT /v1/caps "{\"lease_s\": 2, \"caps\": [
        {\"gpu\": 0, \"cap_w\": 450, \"fallback_w\": 400, \"fallback_until\": $1},
        {\"gpu\": 1, \"cap_w\": 500, \"fallback_w\": 350, \"fallback_until\": $1}]}" "$TOKEN"
}
# over FILE END_MS: samples before END_MS whose sum is over 950 W
over() { awk -v e="$2" '$1 < e && $2 > 950000 { n++ } END { print n + 0 }' "$1"; }
wait_until_ms() {
    while [ $(($(date +%s%N) / 1000000)) -lt "$1" ]; do sleep 0.05; done
}

# ---- 1. restart mid-event ----
start_agent "$tmp/a1.log" $nv || fail "agent A did not start"
end=$(($(date +%s) + 7))
push_event $end
[ "$(sum_mw)" = 950000 ] || fail "the caps are not set: $(sum_mw) mW"
sample "$tmp/s1" & sampler=$!
sleep 0.3
kill -TERM $apid; wait $apid; rc=$?
[ $rc = 0 ] || fail "agent A exited $rc on SIGTERM"
grep -q 'the agent stops during an event: held at 400 W' "$tmp/a1.log" || fail "A did not hold GPU 0"
start_agent "$tmp/a2.log" $nv || fail "agent B did not start: $(cat "$tmp/a2.log")"
grep -q 'held at .* by the agent stopped during an event: kept' "$tmp/a2.log" || fail "B did not take the holds over"
expect 200 GET /v1/status
jq -e '[.gpus[].lease.fallback] == [true, true] and [.gpus[].lease.cap_w] == [400, 350]' "$tmp/body" >/dev/null \
    || fail "B's leases: $(jq -c '[.gpus[].lease]' "$tmp/body")"
wait_until_ms $(( (end + period) * 1000 + 200 ))
kill $sampler; wait $sampler 2>/dev/null; sampler=""
n=$(over "$tmp/s1" $((end * 1000)))
[ "$n" = 0 ] || fail "restart: $n samples over the plan's 950 W before the event's end: $(awk '$2 > 950000' "$tmp/s1" | head -3)"
[ "$(sum_mw)" = 1400000 ] || fail "restart: $(sum_mw) mW one period after the event's end, not the originals' 1400000"
samples=$(wc -l <"$tmp/s1")
stop_agents
stop_helpers

# ---- 2. stop for good ----
start_agent "$tmp/a3.log" $nv || fail "agent C did not start"
end=$(($(date +%s) + 7))
push_event $end
sample "$tmp/s2" & sampler=$!
sleep 0.3
kill -TERM $apid; wait $apid
grep -q 'restore at the hold.s end is armed' "$tmp/a3.log" || fail "C armed no restore: $(tail -5 "$tmp/a3.log")"
wait_until_ms $(( (end - 2) * 1000 ))  # past the lease's end: the fallbacks hold, the agent gone
[ "$(sum_mw)" = 750000 ] || fail "stopped mid-event: $(sum_mw) mW, not the fallbacks' 750000"
wait_until_ms $(( (end + period) * 1000 ))
kill $sampler; wait $sampler 2>/dev/null; sampler=""
[ "$(sum_mw)" = 1400000 ] || fail "stop for good: $(sum_mw) mW at the event's end plus one period, not the originals: $(tail -3 "$tmp/a3.log")"
n=$(over "$tmp/s2" $((end * 1000)))
[ "$n" = 0 ] || fail "stop: $n samples over the plan's 950 W before the event's end"
[ -z "$(ls "$PFLEX_STATE_DIR"/*.state 2>/dev/null)" ] || fail "the restore left a state file"
echo "ok: an agent stopped mid-event: restart 0 of $samples samples over the plan; stop for good restored by the event's end + ${period} s"
