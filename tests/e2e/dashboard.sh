#!/bin/sh
# The Grafana dashboard (deploy/grafana/pflex.json) against a real
# Prometheus: two simulated agents and a controller following a target,
# scraped through deploy/prometheus.yml (its targets pointed at them, its
# interval at 1 s); every panel's query must parse and return data through
# Prometheus' HTTP API, and the dashboard may name only metrics that the
# agent's and the controller's /metrics serve; an agent stopped shows in
# the "Agents down" panel.  Skipped (77) without
# prometheus or jq.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 90 sh "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PFLEX=${PFLEX:-$root/build/pflex}
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }
. "$here/lib/prometheus.sh"
PROM_MAX_SECONDS=80
prom_init
tmp=$PROM_DIR
fail() {
    echo "FAIL: $*"
    for l in "$tmp"/*.log "$tmp"/prom/prometheus.log; do [ -f "$l" ] && { echo "--- $l"; tail -15 "$l"; }; done
    exit 1
}
dash=$root/deploy/grafana/pflex.json
jq -e '.panels | length > 0' "$dash" >/dev/null || fail "$dash: not a dashboard with panels"
printf 'dashboard-token-0123456789abcdef\n' >"$tmp/token"
chmod 600 "$tmp/token"

prom_sim_agents llama-8b-pretrain-h200 olmoe-1b-7b-pretrain-h200 || fail "an agent did not start"
"$PFLEX" controller run --agent "http://127.0.0.1:$aport1" --agent "http://127.0.0.1:$aport2" \
    --token-file "$tmp/token" --target 85%,ramp=2s,confirm=yes --period 0.5 --lease 3 \
    --listen 127.0.0.1:0 --port-file "$tmp/c.port" --log "$tmp/ctl.log" &
prom_track $!
k=0
until [ -s "$tmp/c.port" ]; do [ $k -lt 200 ] || fail "the controller did not start"; sleep 0.05; k=$((k + 1)); done
cport=$(cat "$tmp/c.port")

# deploy/prometheus.yml as shipped, its jobs' targets these processes
awk -v a="$PROM_AGENTS" -v c="127.0.0.1:$cport" '
    /scrape_interval:/ { sub(/[0-9]+s/, "1s") }
    /job_name: pflex-agent/ { job = "a" } /job_name: pflex-controller/ { job = "c" }
    /^ *- [^ ]+:[0-9]+ *$/ {
        if (!done[job]++) {
            ind = $0; sub(/-.*/, "", ind)
            n = split(job == "a" ? a : c, t, " ")
            for (i = 1; i <= n; i++) print ind "- " t[i]
        }
        next
    }
    { print }' "$root/deploy/prometheus.yml" >"$tmp/prometheus.yml"
grep -q "127.0.0.1:$cport" "$tmp/prometheus.yml" || fail "the controller's target not in: $(cat "$tmp/prometheus.yml")"
PROM_CONFIG=$tmp/prometheus.yml
prom_start $PROM_AGENTS "127.0.0.1:$cport" || fail "prometheus did not start on deploy/prometheus.yml"
prom_wait_value 'count(up{job="pflex-agent"} == 1)' 2 20 || fail "prometheus does not scrape the agents"
prom_wait_value 'count(up{job="pflex-controller"} == 1)' 1 20 || fail "prometheus does not scrape the controller"

# every metric the dashboard names is one the daemons serve
curl -s -m 5 "http://127.0.0.1:$aport1/metrics" "http://127.0.0.1:$cport/metrics" \
    | sed -n 's/^# TYPE \([A-Za-z_:][A-Za-z0-9_:]*\) .*/\1/p' | sort -u >"$tmp/served"
jq -r '.panels[].targets[].expr' "$dash" | grep -o '[A-Za-z_][A-Za-z0-9_:]*' \
    | grep -E '^(pflex_|DCGM_)' | sort -u >"$tmp/named"
missing=$(comm -23 "$tmp/named" "$tmp/served")
[ -z "$missing" ] || fail "the dashboard names metrics nobody serves: $missing"

# every panel's query parses and has data (the rate() ones once a minute's
# window holds two scrapes; the target once the first period set it)
jq -r '.panels[] | .title as $t | .targets[] | "\($t)\t\(.expr)"' "$dash" >"$tmp/queries"
n=$(wc -l <"$tmp/queries")
k=0
while :; do
    bad=
    while IFS='	' read -r title expr; do
        r=$(curl -s -m 5 -G "$PROM_URL/api/v1/query" --data-urlencode "query=$expr")
        st=$(printf '%s' "$r" | jq -r '.status' 2>/dev/null)
        [ "$st" = success ] || fail "panel '$title': '$expr' does not parse: $r"
        cnt=$(printf '%s' "$r" | jq '.data.result | length')
        [ "$cnt" -gt 0 ] || bad="$bad
  panel '$title': '$expr' has no data"
    done <"$tmp/queries"
    [ -z "$bad" ] && break
    [ $k -lt 30 ] || fail "after 30 s:$bad"
    sleep 1; k=$((k + 1))
done
# and the data says what the panels claim: a target, GPUs up, none breached
t=$(prom_value 'pflex_controller_target_watts')
[ -n "$t" ] && awk -v t="$t" 'BEGIN { exit !(t > 1000) }' || fail "target_watts $t"
[ "$(prom_value 'sum(pflex_gpu_up)')" = 16 ] || fail "GPUs up: $(prom_value 'sum(pflex_gpu_up)')"
# an agent gone shows in both of the "Agents down" panel's queries
kill -TERM "$apid2"
prom_wait_value 'pflex_controller_agents_down' 1 20 || fail "agents_down never 1 with an agent gone"
prom_wait_value 'count(up{job="pflex-agent"} == 0) or vector(0)' 1 20 \
    || fail "Prometheus never saw the agent down"
echo "dashboard: $n queries of $(jq '.panels | length' "$dash") panels parse and return data"
