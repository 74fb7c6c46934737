#!/bin/sh
# The controller's wall clock steps as an NTP step would, mid-event
# ($PFLEX_TEST_CLOCK_FILE: seconds added to its wall clock, read each
# period; the agent's and this script's clocks do not move):
#   back 120 s     the periods go on at their period (they were scheduled
#                  on the wall clock and waited for on the monotonic one:
#                  none ran for 120 s), and the event stays in force
#   forward 30 min the event stays in force for the rest of its duration
#                  as the monotonic clock counts it (its caps were
#                  released at once), then ends
# Each period's line in the log (stamped by the real clock) gives its
# limit and the site's power measured: every sample in the event is
# counted against the target.  Each step is noted in the audit.  One sim agent on loopback.  Bounded: 60 s.
set -u
case "${PFLEX_BUILD:-}" in
*build-san*) echo "skip: a clock fault test of 15 s, not rerun under the sanitizers"; exit 77 ;;
esac
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT PIPE
. "$(dirname "$0")/lib/agent.sh"

start_agent "$tmp/a.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --sim-job llama-8b-pretrain-h200 --hostname node-c --state-dir "$tmp/sa" || fail "agent"
aport=$port
now() { date +%s.%N; }

# run STEP FOR: the controller (period 0.2 s) with an event of 3.5 kW for
# FOR seconds from its start; its wall clock stepped by STEP s 1.5 s in.
# Sets t0 (when it was started, real clock) and ts (when stepped).
run() {
    rm -f "$tmp/clock" "$tmp/ctl.log"
    t0=$(now)
    PFLEX_TEST_CLOCK_FILE="$tmp/clock" "$PFLEX" controller run --agent "http://127.0.0.1:$aport" \
        --token-file "$tmp/token" --period 0.2 --lease 2 --target "3.5kW,for=$2s,confirm=yes" \
        --log "$tmp/ctl.log" --db "$tmp/ctl$1.db" &
    cpid=$!
    agents="$agents $cpid"
    sleep 1.5
    ts=$(now)
    echo "$1" >"$tmp/clock"
}
stop() { kill -TERM "$cpid"; wait "$cpid" 2>/dev/null; }

# periods FROM TO: "t limit measured" of each period logged in [FROM, TO)
# (seconds since t0, real clock)
periods() {
    awk -v t0="$t0" -v from="$1" -v to="$2" '
        / period [0-9]+: limit / {
            split($1, d, "T"); split(d[2], h, ":"); sub("Z", "", h[3])
            t = h[1] * 3600 + h[2] * 60 + h[3] - (t0 % 86400)
            if (t < -43200) t += 86400
            lim = $5; meas = $12
            if (t >= from && t < to) print t, lim, meas
        }' "$tmp/ctl.log"
}

# check_event FROM TO WHAT: in [FROM, TO) at least one period every 0.5 s,
# each with the event's 3.5 kW limit, and the site's power under it
check_event() {
    periods "$1" "$2" >"$tmp/p"
    n=$(wc -l <"$tmp/p")
    want=$(awk -v a="$1" -v b="$2" 'BEGIN { print int((b - a) / 0.5) }')
    [ "$n" -ge "$want" ] || fail "$3: $n periods in [$1 s, $2 s), expected $want or more: $(tr '\n' ';' <"$tmp/p")"
    bad=$(awk '$2 != "3500" { print }' "$tmp/p" | head -3 | tr '\n' ';')
    [ -z "$bad" ] || fail "$3: the event's limit not in force: $bad"
    over=$(awk '$3 == "nan" || $3 > 3500 * 1.02 { print }' "$tmp/p" | head -3 | tr '\n' ';')
    [ -z "$over" ] || fail "$3: the site over its target: $over"
    echo "$3: $n periods in [$1 s, $2 s), each at 3500 W, the site under it"
}

# back 120 s, mid-event
run -120 30
sleep 4
check_event 2.5 5.5 "back 120 s"
grep -q "wall clock stepped by -120 s" "$tmp/ctl.log" || fail "back 120 s: the step not logged"
stop

# forward 30 min, mid-event: in force to its end (6 s), then released
run 1800 6
sleep 6.5
check_event 2.5 5.5 "forward 30 min"
grep -q "wall clock stepped by +1800 s" "$tmp/ctl.log" || fail "forward 30 min: the step not logged"
i=0
until periods 6.5 60 | awk '$2 == "inf" { f = 1 } END { exit !f }'; do
    [ $i -lt 40 ] || fail "forward 30 min: the event never ended: $(periods 6 60 | tail -3 | tr '\n' ';')"
    sleep 0.1; i=$((i + 1))
done
echo "forward 30 min: the event ended after its duration"
stop
command -v jq >/dev/null || exit 0
for step in -120 1800; do
    "$PFLEX" controller history --db "$tmp/ctl$step.db" --what notes \
        | jq -e '[.notes[] | select(.kind == "clock")] | length == 1' >/dev/null \
        || fail "step $step: not one clock note in the audit"
done
echo "each step noted in the audit"

