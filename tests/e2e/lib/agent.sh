# Sourced by the agent tests: start an agent on a free loopback port, speak
# HTTP to it with curl, read its metrics.  Needs $tmp and $PFLEX.  The
# test re-runs itself under timeout(1) (see bounded), so that every agent
# it starts is its own child, to be signalled by pid, and the whole test
# is bounded in time; its EXIT trap stops what is left.
TOKEN=test-token-0123456789abcdef
printf '%s\n' "$TOKEN" >"$tmp/token"
chmod 600 "$tmp/token"
agents=""

fail() { echo "FAIL: $*"; for l in "$tmp"/*.log; do [ -f "$l" ] && { echo "--- $l"; tail -20 "$l"; }; done; exit 1; }

# start_agent LOG ARGS...: sets $apid and $port (the agent picks a free
# port and writes it to a file: parallel tests never collide).
start_agent() {
    log=$1; shift
    pf="$tmp/port.$$.$(date +%s%N)"
    "$PFLEX" agent --listen 127.0.0.1:0 --port-file "$pf" "$@" 2>"$log" &
    apid=$!
    agents="$agents $apid"
    i=0
    until [ -s "$pf" ]; do
        kill -0 $apid 2>/dev/null || return 1
        [ $i -lt 1000 ] || return 1
        sleep 0.01; i=$((i + 1))
    done
    port=$(cat "$pf")
}

stop_agents() {
    for p in $agents; do kill -KILL $p 2>/dev/null; wait $p 2>/dev/null; done
    agents=""
}

# http METHOD PATH [BODY [TOKEN]]: prints the status; the body is in $tmp/body.
http() {
    set -- "$1" "$2" "${3:-}" "${4:-}"
    if [ -n "$4" ] && [ -n "$3" ]; then
        curl -s -m 10 -o "$tmp/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $4" \
            --data-binary "$3" "http://127.0.0.1:$port$2"
    elif [ -n "$4" ]; then
        curl -s -m 10 -o "$tmp/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $4" \
            "http://127.0.0.1:$port$2"
    elif [ -n "$3" ]; then
        curl -s -m 10 -o "$tmp/body" -w '%{http_code}' -X "$1" --data-binary "$3" \
            "http://127.0.0.1:$port$2"
    else
        curl -s -m 10 -o "$tmp/body" -w '%{http_code}' -X "$1" "http://127.0.0.1:$port$2"
    fi
}

# expect STATUS METHOD PATH [BODY [TOKEN]]
expect() {
    want=$1; shift
    got=$(http "$@")
    [ "$got" = "$want" ] || fail "$1 $2: HTTP $got, expected $want: $(cat "$tmp/body")"
}

# metric NAME GPU: the value of NAME{gpu="GPU",...}; metric NAME: of NAME
metric() {
    curl -s -m 10 "http://127.0.0.1:$port/metrics" >"$tmp/metrics" || return 1
    if [ $# -ge 2 ]; then
        awk -v n="$1{" -v g="gpu=\"$2\"" 'index($0, n) == 1 && index($0, g) { print $NF }' "$tmp/metrics"
    else
        awk -v n="$1" '$1 == n || index($0, n "{") == 1 { print $NF }' "$tmp/metrics"
    fi
}

# wait_metric NAME GPU VALUE SECONDS
wait_metric() {
    i=0
    while [ "$(metric "$1" "$2")" != "$3" ]; do
        [ $i -lt $(($4 * 20)) ] || fail "$1{gpu=$2} is $(metric "$1" "$2"), never $3 in $4 s"
        sleep 0.05; i=$((i + 1))
    done
}

# promtool's lint, less dcgm-exporter's own camelCase label (modelName):
# the exposition must parse and lint clean otherwise.
promtool_ok() {
    command -v promtool >/dev/null || { echo "promtool (Debian prometheus) missing"; exit 77; }
    promtool check metrics <"$1" >"$tmp/promtool" 2>&1
    rc=$?
    [ $rc -eq 0 ] && return 0
    [ $rc -eq 3 ] || { cat "$tmp/promtool"; return 1; }
    if grep -v "^DCGM_[A-Z_]* label names should be written in 'snake_case' not 'camelCase'$" \
        "$tmp/promtool" | grep -q .; then
        cat "$tmp/promtool"
        return 1
    fi
    return 0
}
