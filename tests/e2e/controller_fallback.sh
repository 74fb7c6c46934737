#!/bin/sh
# pflex controller killed (kill -9) in the middle of a grid event, against
# four real `pflex agent --backend sim` processes: the caps it pushed hold
# until their leases end, then each GPU holds the fallback its lease
# carried, and the site -- every GPU's limit in force, as the agents show
# it, and the power they draw -- stays at or under the target until the
# event's end; then every GPU goes back to its original limit.  The leases
# (3 s, periods of 0.5 s) are renewed every other period, staggered by node.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
command -v jq >/dev/null || { echo "jq missing"; exit 77; }

sim="--backend sim --gpus 8 --token-file $tmp/token --interval 0.1 --throughput-window 1"
urls=""
ports=""
for n in 0 1 2 3; do
    start_agent "$tmp/a$n.log" $sim --seed $((n + 1)) --hostname node-$n --state-dir "$tmp/s$n" || fail "agent $n"
    urls="$urls --agent http://127.0.0.1:$port"
    ports="$ports $port"
done

# 32 GPUs of 700 W: 22,400 W uncapped; the event asks for 14,000 W for 24 s
target=14000
event_end=$(($(date +%s) + 24))
"$PFLEX" controller run $urls --token-file "$tmp/token" --target "${target}W,end=@$event_end,confirm=yes" \
    --period 0.5 --lease 3 --log "$tmp/ctl.log" &
cpid=$!
agents="$agents $cpid"
# let it run 12 periods, then kill it
i=0
until [ "$(cat "$tmp/ctl.log" 2>/dev/null | grep -cE '^[^ ]+ period ')" -ge 12 ]; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "the controller did not run 12 periods"
    sleep 0.1
done
kill -KILL $cpid
wait $cpid 2>/dev/null
echo "killed after $(grep -cE '^[^ ]+ period ' "$tmp/ctl.log") periods, $((event_end - $(date +%s))) s before the event's end"
# renewals every other period: after the first, fewer nodes sent than all
awk '$2 == "period" { n++; for (i = 1; i <= NF; i++) if ($i == "nodes" && $(i + 1) == "sent") s = $(i - 1) + 0;
                 if (n > 4 && s < 4) few = 1 }
     END { exit !few }' "$tmp/ctl.log" || fail "every node sent caps every period: $(grep -E '^[^ ]+ period ' "$tmp/ctl.log" | tail -3)"

# until the event's end: the limits in force and the power drawn at or under the target
worst=0
fb=0
samples=0
while [ $(($(date +%s) + 1)) -lt $event_end ]; do
    for p in $ports; do
        curl -s -m 5 "http://127.0.0.1:$p/v1/status" \
            | jq -r '[([.gpus[].limit_w] | add), ([.gpus[].power_w] | add), ([.gpus[] | select(.lease.fallback == true)] | length)] | @tsv' \
            || echo "status of agent $p failed"
    done >"$tmp/sample"
    read -r lim pw on <<EOS
$(awk -F'\t' 'NF != 3 { bad = 1 } { l += $1; w += $2; n += $3 } END { if (bad || NR != 4) print "x x x"; else print l, w, n }' "$tmp/sample")
EOS
    [ "$lim" != x ] || fail "a status could not be read: $(cat "$tmp/sample")"
    # a slow read may end after the event's end, when the originals are back
    [ "$(date +%s)" -lt $event_end ] || break
    samples=$((samples + 1))
    awk -v l="$lim" -v t=$target 'BEGIN { exit !(l <= t) }' || fail "the limits in force sum to $lim W, over the target $target W"
    awk -v w="$pw" -v t=$target 'BEGIN { exit !(w <= t) }' || fail "the GPUs draw $pw W, over the target $target W"
    [ "$on" -gt $fb ] && fb=$on
    sleep 0.5
done
[ $fb = 32 ] || fail "only $fb of 32 GPUs held their fallback before the event's end"
[ $samples -ge 4 ] || fail "only $samples samples before the event's end (a slow machine?)"
# after the event's end: the originals
while [ "$(date +%s)" -lt $event_end ]; do sleep 0.2; done
i=0
while :; do
    ok=1
    for p in $ports; do
        curl -s -m 5 "http://127.0.0.1:$p/v1/status" | jq -e '[.gpus[] | .limit_w == 700 and .lease == null] | all' \
            >/dev/null || ok=0
    done
    [ $ok = 1 ] && break
    i=$((i + 1)); [ $i -lt 50 ] || fail "not every GPU back at 700 W 5 s after the event's end"
    sleep 0.1
done
grep -E "^[^ ]+ (period|fallbacks)" "$tmp/ctl.log" | head -8
echo "ok: controller killed mid-event: $samples samples at or under $target W, every GPU on its fallback, then restored"
