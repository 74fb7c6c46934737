#!/bin/sh
# The grid meter end to end: a real Prometheus scrapes two sim agents and a
# small meter exporter (tests/metrics_server.c serving the site's non-GPU
# load, site_other_watts); the controller closes its loop on
#   --meter 'sum(DCGM_FI_DEV_POWER_USAGE) + on() site_other_watts'
# A step of the non-GPU load of 10 % of the site during an event is
# absorbed within 3 periods: no sample of the meter (as Prometheus has it)
# over the target afterwards.  Then the exporter stops: the meter's series
# goes stale and the controller falls back to --other-w, saying so.
# Skipped (77) without prometheus.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib/prometheus.sh
fail() {
    echo "FAIL: $*"
    [ -n "${PROM_DIR:-}" ] && tail -20 "$PROM_DIR/ctl.log" 2>/dev/null
    exit 1
}
PFLEX=${PFLEX:-build/pflex}
B=${PFLEX_BUILD:-build}
S="$B/tests/metrics_server"
[ -x "$PFLEX" ] || fail "$PFLEX not built"
[ -x "$S" ] || fail "$S not built (make test-bins)"
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }
prom_init
# 3 s: the read path's own delays fit in a period's length (the step's
# scrape, 1 s; the wait for a period; NVML's 1 s mean of the drop; its
# scrape, 1 s), so that "3 periods" measures the loop, not the harness
PERIOD=3
OTHER0=3000
TARGET=11000

umask 077
echo "meter-e2e-token-0123456789abcdef" > "$PROM_DIR/token"
prom_sim_agents llama-8b-pretrain-h200 llama-8b-pretrain-h200 || fail "the sim agents did not start"
other() {
    printf '# HELP site_other_watts The site non-GPU load.\n# TYPE site_other_watts gauge\nsite_other_watts %s\n' "$1" \
        > "$PROM_DIR/other.new"
    mv "$PROM_DIR/other.new" "$PROM_DIR/other"
}
other $OTHER0
"$S" "$PROM_DIR/mport" "$PROM_DIR/other" 120 &
mpid=$!
prom_track $mpid
i=0
until [ -s "$PROM_DIR/mport" ]; do [ $i -lt 50 ] || fail "the meter exporter did not start"; sleep 0.1; i=$((i + 1)); done
# shellcheck disable=SC2086
prom_start $PROM_AGENTS "127.0.0.1:$(cat "$PROM_DIR/mport")" || fail "prometheus did not start"
prom_wait_up 3 30 || fail "Prometheus does not scrape the agents and the exporter"
METER='sum(DCGM_FI_DEV_POWER_USAGE) + on() site_other_watts'
prom_wait_value "count($METER)" 1 30 || fail "the meter's query has no value"

"$PFLEX" controller run --agent "http://127.0.0.1:$aport1" --agent "http://127.0.0.1:$aport2" \
    --token-file "$PROM_DIR/token" --period $PERIOD --lease 10 --other-w $OTHER0 \
    --meter "$METER" --meter-url "$PROM_URL" --meter-max-age 4 \
    --target "${TARGET}W,confirm=yes" --listen 127.0.0.1:0 --port-file "$PROM_DIR/cport" \
    --log "$PROM_DIR/ctl.log" 2>"$PROM_DIR/ctl.err" &
cpid=$!
prom_track $cpid
i=0
until [ -s "$PROM_DIR/cport" ]; do [ $i -lt 100 ] || fail "the controller's API did not start"; sleep 0.1; i=$((i + 1)); done
cport=$(cat "$PROM_DIR/cport")
status() { curl -sf --max-time 5 "http://127.0.0.1:$cport/v1/status"; }

# the site settles under the target, the meter in use
i=0
until status | jq -e --argjson t $TARGET '.meter.state == "ok" and .site_power_w != null and .site_power_w <= $t' \
        >/dev/null 2>&1; do
    [ $i -lt 60 ] || fail "the site never settled under $TARGET W: $(status | jq -c .meter)"
    sleep 0.5; i=$((i + 1))
done
sleep 6
site=$(prom_value "$METER")
step=$(awk -v s="$site" 'BEGIN { printf "%.0f", s * 0.10 }')
t_step=$(date +%s.%N)
other $((OTHER0 + step))
echo "the meter read ${site} W under ${TARGET} W; the non-GPU load steps up by ${step} W"
echo "the controller's meter then: $(status | jq -c '.meter | {site_w, rest_raw_w, rest_w, other_w}')"
sleep $((PERIOD * 3 + 12))
t_end=$(date +%s)
from=$(awk -v t="$t_step" -v p=$PERIOD 'BEGIN { printf "%.3f", t + 3 * p }')
prom_query_range "$METER" "$from" "$t_end" 0.25 > "$PROM_DIR/range" || fail "query_range"
over=$(jq --argjson t $TARGET '[.data.result[0].values[] | select((.[1] | tonumber) > $t)] | length' "$PROM_DIR/range")
n=$(jq '.data.result[0].values | length' "$PROM_DIR/range")
worst=$(jq '[.data.result[0].values[] | .[1] | tonumber] | max' "$PROM_DIR/range")
[ "$n" -gt 20 ] || fail "only $n samples of the meter after the step"
[ "$over" -eq 0 ] || fail "$over of $n meter samples over $TARGET W from 3 periods after the step (worst $worst W)"
status | jq -e --argjson o $OTHER0 '.meter.rest_w > $o' >/dev/null \
    || fail "the rest did not follow the step: $(status | jq -c .meter)"
echo "after 3 periods: $n meter samples, none over $TARGET W (worst $worst W)"

# the meter goes stale: its exporter stops, Prometheus drops the series
# (the fallback logged at the start, before the first read, is not it)
kill -TERM $mpid
i=0
until grep -q 'meter: falling back to --other-w.*no series' "$PROM_DIR/ctl.log"; do
    [ $i -lt 40 ] || fail "no fallback to --other-w logged after the meter went stale"
    sleep 0.5; i=$((i + 1))
done
status | jq -e --argjson o $OTHER0 '.meter.fallback == true and .meter.other_w == $o' >/dev/null \
    || fail "the status does not show the fallback: $(status | jq -c .meter)"
curl -sf --max-time 5 "http://127.0.0.1:$cport/metrics" | grep -q '^pflex_controller_meter_up 0$' \
    || fail "pflex_controller_meter_up is not 0"
grep 'meter: falling back.*no series' "$PROM_DIR/ctl.log" | head -1
kill -TERM $cpid
echo "ok"
