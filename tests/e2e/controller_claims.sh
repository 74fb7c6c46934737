#!/bin/sh
# The controller's claims follow facts: what /v1/status, /metrics, /healthz
# and /readyz say against what the agents hold, in the faults an operator's
# trial found (three `pflex agent --backend sim` nodes of 8 GPUs at 700 W,
# 16.8 kW at full power).  The facts are read from the agents straight: the
# site's power (each GPU at the lower of its power and its limit) and the
# sum of the GPUs' limits.  In turn:
#   401        the controller holds a wrong token: every push refused;
#   400        the agents take leases of at most 5 s, the controller asks 6;
#   unreached  a 16-GPU node the controller cannot reach, under 16 kW
#              (then with a job map that says how many GPUs it has);
#   stale      a Prometheus (tests/metrics_server) replaying a 10-minute-old
#              answer; then one answering an empty result; then NaN.
# In the first three the site is over its target (nothing the controller
# can do): the API must say infeasible, a worst case at least the agents'
# limits, the push failures by agent and reason, /readyz 503 (and /healthz
# 503 while no period's caps are confirmed).  In the last the site is under
# its target (caps renewed past their lease, nothing raised): the API must say telemetry
# stale or down, no site power read from it, no agent down, /readyz 503,
# /healthz 200.  CLAIMS_ONLY="401 nan ..." runs only those cases.  Bounded:
# 120 s.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PFLEX=${PFLEX:-$root/build/pflex}
SERVER=${PFLEX_BUILD:-$root/build}/tests/metrics_server
[ -x "$SERVER" ] || { echo "skip: $SERVER not built (make test-bins)"; exit 77; }
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'touch "$tmp/feed.stop"; stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$here/lib/agent.sh"
printf 'wrong-token-0123456789abcdef\n' >"$tmp/wrong"
chmod 600 "$tmp/wrong"
sim="--backend sim --token-file $tmp/token --interval 0.1 --throughput-window 1"

# agents N MORE...: N agents of 8 GPUs; their ports in $ports
agents_up() {
    ports=""
    n=$1; shift
    for k in $(seq 1 "$n"); do
        # start_agent counts with $i
        start_agent "$tmp/a$k.log" $sim --gpus 8 --seed "$k" --hostname "node-$k" --state-dir "$tmp/s$k.$$.$(date +%s%N)" "$@" \
            || fail "agent $k"
        ports="$ports $port"
    done
}
urls() { for p in $ports; do printf ' --agent http://127.0.0.1:%s' "$p"; done; }
# facts PORTS: "POWER LIMITS" of the agents, each GPU at min(power, limit)
facts() {
    for p in $1; do curl -s -m 2 "http://127.0.0.1:$p/v1/status"; done |
        jq -s -r '[.[].gpus[]] | "\(map([(.power_w // 0), .limit_w] | min) | add | floor) \(map(.limit_w) | add | floor)"'
}
# controller LEASE ARGS...: started with its API; $cpid, $cport
controller() {
    rm -f "$tmp/cport"
    nctl=$((${nctl:-0} + 1))
    lease=$1; shift
    "$PFLEX" controller run --period 0.5 --lease "$lease" --listen 127.0.0.1:0 --port-file "$tmp/cport" \
        --log "$tmp/ctl$nctl.log" "$@" &
    cpid=$!
    agents="$agents $cpid"
    i=0
    until [ -s "$tmp/cport" ]; do [ $i -lt 200 ] || fail "the controller did not start"; sleep 0.05; i=$((i + 1)); done
    cport=$(cat "$tmp/cport")
}
api() { curl -s -m 2 -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$cport$1"; }
# wait_status JQ SECONDS: until /v1/status satisfies JQ
wait_status() {
    i=0
    until api /v1/status >/dev/null && jq -e "$1" "$tmp/body" >/dev/null 2>&1; do
        [ $i -lt $(($2 * 10)) ] || fail "/v1/status never came to $1: $(jq -c '{periods, worst_w, feasible, telemetry_ok, telemetry_state, site_power_w, agents_down, nodes: [.nodes[]? | {push, push_http}]}' "$tmp/body" 2>/dev/null)"
        sleep 0.1; i=$((i + 1))
    done
}
# expect_probe PATH STATUS
expect_probe() {
    got=$(api "$1")
    [ "$got" = "$2" ] || fail "$1: HTTP $got, expected $2: $(cat "$tmp/body")"
}
# refused CASE TARGET REASON PORTS [REACHED]: the site (the agents of
# PORTS) over its target, the API saying so: a worst case at least the
# limits the agents hold, but for what it marks as assumed (the nodes it
# never reached: REACHED are the others)
refused() {
    set -- "$1" "$2" "$3" "$4" "$(facts "$4")" "$(facts "${5:-$4}")"
    pw=${5% *}; lim=${5#* }; known=${6#* }
    [ "$pw" -gt "$2" ] || fail "$1: the fault did not show: the site at $pw W under $2 W"
    api /v1/status >/dev/null
    cp "$tmp/body" "$tmp/status.$1.json"
    jq -e --argjson lim "$known" --argjson t "$2" \
        '.feasible == false and .worst_w - .assumed_w >= $lim - 1 and (.worst_w > $t or .assumed_w > 0)' "$tmp/body" >/dev/null \
        || fail "$1: the site at $pw W (limits $lim W) against $2 W, the API claims: $(jq -c '{worst_w, planned_worst_w, assumed_w, feasible}' "$tmp/body")"
    if [ "$3" != assumed ]; then
        jq -e --arg r "$3" '[.nodes[] | .push == $r] | all' "$tmp/body" >/dev/null \
            || fail "$1: the nodes' last push is not '$3': $(jq -c '[.nodes[] | {push, push_http}]' "$tmp/body")"
        api /metrics >/dev/null
        n=$(grep -c "^pflex_controller_push_failures_total{agent=\"http://127.0.0.1:[0-9]*\",reason=\"$3\"} [1-9]" "$tmp/body")
        [ "$n" = 3 ] || fail "$1: $n agents with push failures '$3' in /metrics: $(grep push_failures "$tmp/body")"
        if command -v promtool >/dev/null; then
            cp "$tmp/body" "$tmp/metrics.$1"
            promtool_ok "$tmp/metrics.$1" || fail "$1: /metrics does not lint clean"
        fi
        expect_probe /healthz 503
    else
        jq -e '.assumed_nodes == 1 and .assumed_w == 8000 and .nodes[2].unreached_w == 8000 and .nodes[2].assumed' \
            "$tmp/body" >/dev/null \
            || fail "$1: the unreached node is not marked assumed: $(jq -c '{assumed_nodes, nodes: [.nodes[] | {agent, unreached_w, assumed}]}' "$tmp/body")"
    fi
    api /metrics >/dev/null
    grep -q '^pflex_controller_feasible 0$' "$tmp/body" || fail "$1: /metrics: $(grep '^pflex_controller_feasible' "$tmp/body")"
    expect_probe /readyz 503
    echo "$1: site $pw W, limits $lim W against $2 W; the API: worst case $(jq .worst_w "$tmp/status.$1.json") W" \
        "($(jq .assumed_w "$tmp/status.$1.json") W assumed; planned $(jq .planned_worst_w "$tmp/status.$1.json") W), feasible false"
}
stop_all() { stop_agents; rm -f "$tmp"/port.*; }
only() {
    for w in ${CLAIMS_ONLY:-401 400 unreached mapped stale empty nan}; do for x in "$@"; do [ "$w" = "$x" ] && return 0; done; done
    return 1
}

# 1. a wrong token: 401 on every push
if only 401; then
    agents_up 3
    controller 6 $(urls) --token-file "$tmp/wrong" --target 11000W,confirm=yes
    wait_status '.periods >= 5' 10
    refused 401 11000 unauthorized "$ports"
    stop_all
fi

# 2. leases longer than the agents take: 400 on every push
if only 400; then
    agents_up 3 --max-lease 5
    controller 6 $(urls) --token-file "$tmp/token" --target 11000W,confirm=yes
    wait_status '.periods >= 5' 10
    refused 400 11000 rejected "$ports"
    stop_all
fi

# 3. a node of 16 GPUs never reached (its URL leads nowhere), 16 kW
if only unreached mapped; then
    agents_up 2
    start_agent "$tmp/a16.log" $sim --gpus 16 --seed 9 --hostname node-16 --state-dir "$tmp/s16" || fail "agent 16"
fi
if only unreached; then
    controller 6 $(urls) --agent "http://127.0.0.1:9" --token-file "$tmp/token" --target 16000W,confirm=yes --agent-max-w 8000
    wait_status '.periods >= 5' 10
    refused unreached 16000 assumed "$ports $port" "$ports"
    kill -KILL $cpid
fi
# the job map says how many GPUs the unreached node's host has (its URL's):
# each counts at the site's largest limit, the site planned under its
# target by it, and that is no assumption
if only mapped; then
    printf 'job,name,host,gpu\n' >"$tmp/map.csv"
    for g in $(seq 0 15); do
        [ $g -lt 8 ] && printf 'a,,node-1,%s\nb,,node-2,%s\n' $g $g
        printf 'c,,127.0.0.1,%s\n' $g
    done >>"$tmp/map.csv"
    controller 6 $(urls) --agent "http://127.0.0.1:9" --token-file "$tmp/token" --target 16000W,confirm=yes --agent-max-w 8000 \
        --job-map "$tmp/map.csv"
    wait_status '.periods >= 5' 10
    set -- $(facts "$ports $port")
    api /v1/status >/dev/null
    cp "$tmp/body" "$tmp/status.mapped.json"
    jq -e --argjson lim "$2" '.feasible and .assumed_nodes == 0 and .nodes[2].unreached_w == 11200
                              and (.nodes[2].assumed | not) and .worst_w >= $lim - 1 and .worst_w <= 16000' \
        "$tmp/body" >/dev/null \
        || fail "unreached, mapped: limits $2 W, the API claims: $(jq -c '{worst_w, feasible, assumed_nodes, nodes: [.nodes[] | {unreached_w, assumed}]}' "$tmp/body")"
    [ "$1" -le 16000 ] && [ "$2" -le 16001 ] || fail "unreached, mapped: the site at $1 W, limits $2 W, over 16000 W"
    expect_probe /readyz 200
    echo "unreached, mapped: site $1 W, limits $2 W against 16000 W; the API: worst case $(jq .worst_w "$tmp/status.mapped.json") W, feasible"
fi
! only unreached mapped || stop_all
only stale empty nan || { echo ok; exit 0; }

# 4. telemetry through a fake Prometheus, fed from the agents every 0.2 s
# ("live"), or a frozen answer 600 s old ("stale"), an empty result, NaN
agents_up 3
printf 'live\n' >"$tmp/mode"
prom_answer() {  # MODE TS < statuses
    jq -s -c --arg mode "$1" --argjson ts "$2" '{status: "success", data: {resultType: "vector", result: (
        if $mode == "empty" then [] else [.[] | .hostname as $h | (.gpus[] | . as $g |
            ({n: "DCGM_FI_DEV_POWER_USAGE", v: (if $mode == "nan" then "NaN" else ($g.power_w // 0 | tostring) end)},
             {n: "DCGM_FI_DEV_POWER_MGMT_LIMIT", v: ($g.limit_w | tostring)},
             {n: "pflex_gpu_limit_min_watts", v: ($g.min_w | tostring)},
             {n: "pflex_gpu_limit_max_watts", v: ($g.max_w | tostring)},
             {n: "pflex_gpu_up", v: "1"})
            | {metric: {__name__: .n, Hostname: $h, gpu: ($g.gpu | tostring)}, value: [$ts, .v]}),
          (.jobs[]? | {metric: {__name__: "pflex_job_throughput", Hostname: $h, exported_job: .job},
                       value: [$ts, (.throughput // "NaN" | tostring)]})] end)}}'
}
( while [ ! -f "$tmp/feed.stop" ]; do
      mode=$(cat "$tmp/mode")
      if [ "$mode" = live ]; then
          for p in $ports; do curl -s -m 1 "http://127.0.0.1:$p/v1/status"; done >"$tmp/statuses.json"
          date +%s >"$tmp/statuses.t"
      fi
      ts=$(date +%s)
      [ "$mode" = stale ] && ts=$(($(cat "$tmp/statuses.t") - 600))
      prom_answer "$mode" "$ts" <"$tmp/statuses.json" >"$tmp/prom.tmp" 2>/dev/null && mv "$tmp/prom.tmp" "$tmp/prom.json"
      sleep 0.2
  done ) &
feeder=$!
agents="$agents $feeder"
i=0
until [ -s "$tmp/prom.json" ]; do [ $i -lt 50 ] || fail "no Prometheus answer fed"; sleep 0.1; i=$((i + 1)); done
"$SERVER" "$tmp/prom.port" "$tmp/prom.json" 100 &
agents="$agents $!"
i=0
until [ -s "$tmp/prom.port" ]; do [ $i -lt 50 ] || fail "the fake Prometheus did not start"; sleep 0.1; i=$((i + 1)); done
controller 6 $(urls) --token-file "$tmp/token" --target 11000W,confirm=yes --prometheus "http://127.0.0.1:$(cat "$tmp/prom.port")"
wait_status '.periods >= 4 and .feasible and .telemetry_ok and .site_power_w != null' 15
set -- $(facts "$ports")
[ "$1" -le 11000 ] || fail "live: the site at $1 W over 11000 W"
echo "live: site $1 W, limits $2 W against 11000 W"
# sets PORT: the caps agent PORT has set on its GPU 0 since it started
sets() {
    curl -s -m 2 "http://127.0.0.1:$1/metrics" | awk '/^pflex_lease_caps_set_total\{gpu="0"/ { print $NF }'
}
# expiry PORT: when agent PORT's lease on GPU 0 ends
expiry() { curl -s -m 2 "http://127.0.0.1:$1/v1/status" | jq '.gpus[0].lease.expires_at // 0'; }
p1=${ports# }; p1=${p1%% *}
# held CASE STATE WORD: the site held under its target, the API saying why
held() {
    printf '%s\n' "$1" >"$tmp/mode"
    wait_status ".telemetry_state == \"$2\"" 5
    # whether the agents still hold their caps is unknown: they are sent
    # every period (0.5 s), not once a renewal (every 2 s: at most 2 in 2 s),
    # and they are renewed, never lapse
    s0=$(sets "$p1"); e0=$(expiry "$p1")
    sleep 2
    s1=$(sets "$p1"); e1=$(expiry "$p1")
    [ $((s1 - s0)) -ge 3 ] || fail "$1: $((s1 - s0)) pushes to an agent in 2 s of telemetry $2 (periods of 0.5 s)"
    awk -v a="$e0" -v b="$e1" 'BEGIN { exit !(b > a + 1) }' || fail "$1: the leases were not renewed ($e0 -> $e1)"
    api /v1/status >/dev/null
    cp "$tmp/body" "$tmp/status.$1.json"
    jq -e --arg w "$3" '.telemetry_ok == false and (.telemetry_reason | contains($w)) and .site_power_w == null
                        and .agents_down == 0 and .feasible and .completed' "$tmp/body" >/dev/null \
        || fail "$1: the API claims: $(jq -c '{telemetry_ok, telemetry_state, telemetry_reason, site_power_w, agents_down, feasible, completed}' "$tmp/body")"
    set -- "$1" "$2" "$3" $(facts "$ports")
    [ "$4" -le 11000 ] || fail "$1: the site at $4 W over 11000 W"
    jq -e --argjson lim "$5" '.worst_w >= $lim - 1' "$tmp/body" >/dev/null \
        || fail "$1: limits $5 W, claimed worst case $(jq .worst_w "$tmp/body") W"
    for p in $ports; do
        curl -s -m 2 "http://127.0.0.1:$p/v1/status" | jq -e '[.gpus[] | .lease != null and .lease.fallback == false] | all' >/dev/null \
            || fail "$1: agent $p's caps were not renewed: $(curl -s -m 2 "http://127.0.0.1:$p/v1/status" | jq -c '[.gpus[].lease]')"
    done
    echo "$1: $((s1 - s0)) pushes to an agent in 2 s, its lease renewed from $e0 to $e1"
    expect_probe /healthz 200
    expect_probe /readyz 503
    grep -q "$3" "$tmp/body" || fail "$1: /readyz does not say why: $(cat "$tmp/body")"
    api /metrics >/dev/null
    grep -q '^pflex_controller_telemetry_up 0$' "$tmp/body" || fail "$1: /metrics: $(grep telemetry_up "$tmp/body")"
    echo "$1: site $4 W, limits $5 W against 11000 W; telemetry $2 ($(jq -r .telemetry_reason "$tmp/status.$1.json"))"
    printf 'live\n' >"$tmp/mode"
    wait_status '.telemetry_ok' 5
}
! only stale || held stale stale "s old (stale past 30 s)"
! only empty || held empty down "empty result"
! only nan || held nan down "NaN"
# telemetry back: ready again
expect_probe /healthz 200
expect_probe /readyz 200
! only stale || grep -q 'prometheus: .*s old (stale past 30 s) (caps held)' "$tmp/ctl$nctl.log" || fail "the stale answer left no trace in the log"
echo ok
