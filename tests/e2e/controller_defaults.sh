#!/bin/sh
# Do no harm by default, and one target grammar, against a real `pflex
# agent --backend sim` (8 GPUs of 700 W):
# (a) a fresh `pflex controller run` with no target sets no cap under any
#     GPU's largest over 120 periods (the agent read all along, the
#     controller's audit and log at the end); opted in to learning between
#     events, the same run does probe (so the check can fail);
# (b) --target 75 (no unit) exits 2 saying "W or %" and sets nothing;
# (c) --target 60%, a step the API would refuse (409), exits 2 with the
#     API's message and sets nothing; with confirm=yes it runs and cuts;
# (d) the grammar's refusals, on the command line (exit 2) and the API
#     (400) alike.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
command -v jq >/dev/null || { echo "jq missing"; exit 77; }

start_agent "$tmp/agent.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.05 \
    --throughput-window 0.5 --sim-job llama-8b-pretrain-h200 --state-dir "$tmp/state" || fail "agent"
url="http://127.0.0.1:$port"
aport=$port
# limits: the agent's GPU limits and largest limits, one "LIMIT MAX" a line
limits() { curl -s -m 5 "http://127.0.0.1:$aport/v1/status" | jq -r '.gpus[] | "\(.limit_w) \(.max_w)"'; }
# uncapped: every GPU at its largest limit (a lease on that is no cut);
# untouched: and no lease either (no controller has written to it)
uncapped() {
    curl -s -m 5 "http://127.0.0.1:$aport/v1/status" | jq -e '.gpus | length == 8 and all(.limit_w == .max_w)' >/dev/null
}
untouched() {
    curl -s -m 5 "http://127.0.0.1:$aport/v1/status" | jq -e 'all(.gpus[]; .lease == null)' >/dev/null && uncapped
}
untouched || fail "the agent does not start untouched: $(limits | tr '\n' ' ')"

# (a) 120 periods of 0.05 s, no target; the agent read every 0.05 s meanwhile
run_quiet() {  # NAME [OPTIONS...]: the controller's run, the agent's limits read meanwhile
    name=$1; shift
    ( while [ ! -f "$tmp/$name.stop" ]; do limits; sleep 0.05; done >"$tmp/$name.limits" ) &
    reader=$!
    "$PFLEX" controller run --agent "$url" --token-file "$tmp/token" --period 0.05 --periods 120 \
        --db "$tmp/$name.db" --log "$tmp/$name.log" "$@"
    rc=$?
    touch "$tmp/$name.stop"
    wait $reader
    [ $rc -eq 0 ] || fail "$name: controller run: exit $rc"
    [ "$(grep -c ' period ' "$tmp/$name.log")" -eq 120 ] || fail "$name: not 120 periods"
    # the least cap under each GPU's largest: the agent's view, and the audit's
    lows=$(awk '$1 < $2 { n++ } END { print n + 0 }' "$tmp/$name.limits")
    reads=$(($(wc -l <"$tmp/$name.limits") / 8))
    "$PFLEX" controller history --db "$tmp/$name.db" --what caps --limit 100000 >"$tmp/$name.caps" \
        || fail "$name: history"
    audit_low=$(jq '[.caps[] | select(.cap_w < 700)] | length' "$tmp/$name.caps")
    probes=$(awk '$2 == "period" { for (i = 1; i <= NF; i++) if ($(i + 1) ~ /^probes,?$/) n += $i }
                  END { print n + 0 }' "$tmp/$name.log")
}
run_quiet default
echo "default: $reads readings of 8 GPUs, $lows GPU-readings under their largest; audit: $audit_low caps under 700 W;" \
    "$probes probes"
[ "$reads" -ge 10 ] || fail "default: only $reads readings of the agent"
[ "$(jq '.caps | length' "$tmp/default.caps")" -gt 0 ] || fail "default: no caps in the audit"
[ "$lows" -eq 0 ] && [ "$audit_low" -eq 0 ] && [ "$probes" -eq 0 ] \
    || fail "default: a cap under a GPU's largest with no target in force"
uncapped || fail "default: the agent ends capped: $(limits | tr '\n' ' ')"
# opted in (all the budget it wants), the same site is probed within the
# same 120 periods: a run that could not cut would prove nothing above
run_quiet learn --learn-between-events --learn-budget 100%
echo "learning between events: $lows GPU-readings of $reads readings under the largest; $probes probes"
[ "$probes" -gt 0 ] && [ "$audit_low" -gt 0 ] || fail "learning between events: no probe in 120 periods"
# the leases run out (12 periods): the agent back at its largest
i=0
until untouched; do [ $i -lt 100 ] || fail "the probes' caps did not lapse"; sleep 0.1; i=$((i + 1)); done

# the learning's knobs alone, or a budget without its unit: exit 2
for bad in "--explore-lead 60" "--learn-budget 1%" "--learn-between-events --learn-budget 0.5" \
           "--learn-between-events --learn-budget 101%"; do
    # shellcheck disable=SC2086
    "$PFLEX" controller run --agent "$url" --periods 1 $bad 2>"$tmp/o.err"
    rc=$?
    [ $rc -eq 2 ] || fail "$bad: exit $rc"
done

# (b) no unit: exit 2, the message, nothing set (the agent not even asked)
"$PFLEX" controller run --agent "$url" --token-file "$tmp/token" --period 0.05 --periods 20 --target 75 \
    --log "$tmp/b.log" 2>"$tmp/b.err"
rc=$?
[ $rc -eq 2 ] || fail "--target 75: exit $rc"
grep -q -- "--target 75: a target needs a unit: W or % (e.g. 75% or 75kW)" "$tmp/b.err" \
    || fail "--target 75: $(cat "$tmp/b.err")"
untouched || fail "--target 75 set something: $(limits | tr '\n' ' ')"

# (c) 60 % of 5.6 kW at once in a period of 0.2 s: far faster than the
# site's ramp rate (2 % of 5.6 kW a second): not set, exit 2, the API's words
"$PFLEX" controller run --agent "$url" --token-file "$tmp/token" --period 0.2 --periods 20 --target 60% \
    --log "$tmp/c.log" 2>"$tmp/c.err"
rc=$?
[ $rc -eq 2 ] || fail "--target 60%: exit $rc ($(cat "$tmp/c.err"))"
grep -q -- "--target 60%: a step down of .* is faster than .* W/s: give it ramp=.*s or more, or add confirm=yes" \
    "$tmp/c.err" || fail "--target 60%: $(cat "$tmp/c.err")"
uncapped || fail "a refused --target 60% set something: $(limits | tr '\n' ' ')"
# the API refuses the same step (409) in the same words; (d) and each
# grammar refusal below with 400
"$PFLEX" controller run --agent "$url" --token-file "$tmp/token" --api-token-file "$tmp/token" \
    --listen 127.0.0.1:0 --port-file "$tmp/cport" --period 0.2 --log "$tmp/api.log" &
cpid=$!
agents="$agents $cpid"
i=0
until [ -s "$tmp/cport" ]; do [ $i -lt 100 ] || fail "controller API did not start"; sleep 0.05; i=$((i + 1)); done
port=$(cat "$tmp/cport")
i=0
until expect 200 GET /v1/status && jq -e '.floor_w != null' "$tmp/body" >/dev/null; do
    [ $i -lt 50 ] || fail "no period ran: $(cat "$tmp/body")"; sleep 0.1; i=$((i + 1)); done
expect 409 PUT /v1/target '{"target": "60%"}' "$TOKEN"
grep -q "a step down of .* is faster than .* W/s: give it ramp=.*s or more, or add confirm=yes" "$tmp/body" \
    || fail "API 60%: $(cat "$tmp/body")"
for t in 75 151% 1e-9W 0x1p4W 1e-300kW "60%,start=@-1" "60%,start=@100000000000" "60%,for=1m,for=2m" \
         "60%,ramp=2d" "+60%"; do
    expect 400 PUT /v1/target "{\"target\": \"$t\"}" "$TOKEN"
    cp "$tmp/body" "$tmp/api.err"
    "$PFLEX" controller run --agent "$url" --token-file "$tmp/token" --periods 1 --target "$t" \
        --log "$tmp/d.log" 2>"$tmp/cli.err"
    rc=$?
    [ $rc -eq 2 ] || fail "--target $t: exit $rc"
    # the same words both ways
    why=$(sed 's/^pflex controller: --target [^:]*: //; q' "$tmp/cli.err")
    jq -r .error "$tmp/api.err" | grep -qF -- "$why" || fail "--target $t: the CLI says '$why', the API $(cat "$tmp/api.err")"
done
grep -q "5138-11-16T09:46:40Z is out of range" "$tmp/api.log" || fail "the year 5138 not refused as out of range"
expect 200 GET /v1/status
jq -e '.target == null' "$tmp/body" >/dev/null || fail "a refused target is in force: $(cat "$tmp/body")"
kill -TERM $cpid
wait $cpid
# (c) confirmed, the same step is set
"$PFLEX" controller run --agent "$url" --token-file "$tmp/token" --period 0.2 --periods 10 \
    --target 60%,confirm=yes --log "$tmp/c2.log" 2>"$tmp/c2.err" || fail "--target 60%,confirm=yes: exit $?"
sum=$(limits | awk '{ s += $1 } END { print int(s) }')
[ "$sum" -le 3360 ] || fail "--target 60%,confirm=yes: the GPUs' limits sum to $sum W, over 3360 W"

echo "controller_defaults: ok"
