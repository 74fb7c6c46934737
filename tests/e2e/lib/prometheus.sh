# prometheus.sh — a real Prometheus server for end-to-end tests, sourced by
# tests/e2e/*.sh (POSIX sh).  Loopback only, bounded in time everywhere.
#
#   . tests/e2e/lib/prometheus.sh
#   prom_init                    # skips the test (exit 77) without prometheus;
#                                # makes $PROM_DIR, traps EXIT/INT/TERM
#   prom_track PID               # a process of the test, stopped on exit too
#   prom_start HOST:PORT...      # scrape these every second; waits for /-/ready
#                                # (PROM_CONFIG=FILE: that configuration instead)
#   prom_query 'EXPR'            # /api/v1/query JSON on stdout
#   prom_value 'EXPR'            # the first sample's value ("" when none)
#   prom_wait_value 'EXPR' WANT SECONDS   # until the value is WANT, or fail
#   prom_wait_up N SECONDS       # until N targets are up, or fail
#   prom_query_range 'EXPR' START END STEP   # /api/v1/query_range JSON
#   prom_stop                    # TERM, then KILL after PROM_STOP_SECONDS
#   prom_sim_agents JOB...       # one `pflex agent --backend sim --gpus 8` a job
#                                # (node-i, seed i; token $PROM_DIR/token),
#                                # tracked; sets apid<i>, aport<i> and
#                                # PROM_AGENTS (their HOST:PORTs); 1 when one
#                                # does not start within 10 s
#
# Settings: PROM_MAX_SECONDS (default 300: prometheus is run under timeout
# and never outlives that), PROM_READY_SECONDS (30), PROM_STOP_SECONDS (10).
# The server's own files (config, TSDB, log) live in $PROM_DIR/prom/; the
# test may put its own in $PROM_DIR, which is removed on exit.

PROM_PID=
PROM_URL=
PROM_TRACKED=

prom_log() { echo "prometheus harness: $*" >&2; }

prom_init() {
    for tool in prometheus promtool curl timeout; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "skip: $tool not installed (Debian packages prometheus, curl, coreutils)"
            exit 77
        fi
    done
    PROM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pflex-prom.XXXXXX") || exit 1
    trap 'prom_cleanup' EXIT
    trap 'prom_cleanup; exit 130' INT TERM
}

prom_track() { PROM_TRACKED="$PROM_TRACKED $1"; }

prom_sim_agents() {
    PROM_AGENTS=
    _n=0
    for _j in "$@"; do
        _n=$((_n + 1))
        "$PFLEX" agent --backend sim --gpus 8 --sim-job "$_j" --seed $_n --hostname "node-$_n" \
            --listen 127.0.0.1:0 --port-file "$PROM_DIR/a$_n.port" --state-dir "$PROM_DIR/s$_n" \
            --token-file "$PROM_DIR/token" --interval 0.1 --throughput-window 1 --label-style prometheus \
            2>"$PROM_DIR/agent$_n.log" &
        eval "apid$_n=$!"
        prom_track $!
    done
    _i=0
    while [ $_i -lt $_n ]; do
        _i=$((_i + 1))
        _k=0
        until [ -s "$PROM_DIR/a$_i.port" ]; do
            [ $_k -lt 200 ] || { prom_log "agent $_i did not start"; return 1; }
            sleep 0.05; _k=$((_k + 1))
        done
        eval "aport$_i=$(cat "$PROM_DIR/a$_i.port")"
        PROM_AGENTS="$PROM_AGENTS 127.0.0.1:$(cat "$PROM_DIR/a$_i.port")"
    done
}

prom_cleanup() {
    prom_stop
    for p in $PROM_TRACKED; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in $PROM_TRACKED; do
        prom_wait_gone "$p" 5 || kill -KILL "$p" 2>/dev/null
    done
    PROM_TRACKED=
    # PFLEX_E2E_KEEP=DIR keeps a copy of the test's files for a post-mortem
    [ -n "${PROM_DIR:-}" ] && [ -n "${PFLEX_E2E_KEEP:-}" ] && cp -r "$PROM_DIR" "$PFLEX_E2E_KEEP"
    [ -n "${PROM_DIR:-}" ] && rm -rf "$PROM_DIR"
    PROM_DIR=
}

# prom_wait_gone PID SECONDS: 0 once the process is gone.
prom_wait_gone() {
    i=0
    while kill -0 "$1" 2>/dev/null; do
        [ $i -ge $(($2 * 10)) ] && return 1
        sleep 0.1
        i=$((i + 1))
    done
    return 0
}

# A port to try, from this shell's pid and the attempt number (20000-59999).
prom_pick_port() {
    awk -v s="$$" -v a="$1" 'BEGIN { srand(s * 7 + a * 7919); print 20000 + int(rand() * 40000) }'
}

prom_start() {
    [ -n "${PROM_DIR:-}" ] || { prom_log "prom_init first"; return 1; }
    [ $# -ge 1 ] || { prom_log "prom_start needs at least one HOST:PORT"; return 1; }
    d="$PROM_DIR/prom"
    mkdir -p "$d/data"
    # PROM_CONFIG=FILE: that configuration instead (its targets the test's)
    if [ -n "${PROM_CONFIG:-}" ]; then cp "$PROM_CONFIG" "$d/prometheus.yml"; else {
        echo "global:"
        echo "  scrape_interval: 1s"
        echo "  scrape_timeout: 1s"
        echo "  evaluation_interval: 1s"
        echo "scrape_configs:"
        echo "  - job_name: harness"
        echo "    static_configs:"
        echo "      - targets:"
        for t in "$@"; do
            echo "          - '$t'"
        done
    } > "$d/prometheus.yml"; fi
    if ! timeout 20 promtool check config "$d/prometheus.yml" > "$d/promtool.log" 2>&1; then
        prom_log "generated config rejected:"; cat "$d/promtool.log" >&2
        return 1
    fi
    attempt=0
    while [ $attempt -lt 5 ]; do
        attempt=$((attempt + 1))
        port=$(prom_pick_port $attempt)
        timeout -s TERM "${PROM_MAX_SECONDS:-300}" prometheus \
            --config.file="$d/prometheus.yml" \
            --storage.tsdb.path="$d/data" \
            --storage.tsdb.retention.time=1h \
            --web.listen-address="127.0.0.1:$port" \
            --log.level=warn > "$d/prometheus.log" 2>&1 &
        PROM_PID=$!
        PROM_URL="http://127.0.0.1:$port"
        i=0
        while [ $i -lt $((${PROM_READY_SECONDS:-30} * 5)) ]; do
            if curl -sf --max-time 1 "$PROM_URL/-/ready" >/dev/null 2>&1; then
                return 0
            fi
            kill -0 "$PROM_PID" 2>/dev/null || break
            sleep 0.2
            i=$((i + 1))
        done
        if grep -q 'address already in use' "$d/prometheus.log"; then
            prom_log "port $port in use, trying another"
            prom_stop
            continue
        fi
        prom_log "not ready at $PROM_URL:"; tail -20 "$d/prometheus.log" >&2
        prom_stop
        return 1
    done
    prom_log "no free port found in 5 tries"
    return 1
}

prom_query() {
    curl -sf --max-time 5 -G --data-urlencode "query=$1" "$PROM_URL/api/v1/query"
}

# The value of the first sample of an instant vector, e.g. "42".
prom_value() {
    prom_query "$1" | tr -d ' \n' | grep -o '"value":\[[^]]*\]' | head -1 |
        sed 's/.*,"\([^"]*\)"\]$/\1/'
}

prom_wait_value() {
    i=0
    while [ $i -lt $(($3 * 4)) ]; do
        v=$(prom_value "$1")
        [ "$v" = "$2" ] && return 0
        sleep 0.25
        i=$((i + 1))
    done
    prom_log "$1 is '$v' after $3 s, not '$2'"
    return 1
}

prom_wait_up() {
    prom_wait_value 'count(up{job="harness"} == 1)' "$1" "$2"
}

prom_query_range() {
    curl -sf --max-time 5 -G --data-urlencode "query=$1" --data-urlencode "start=$2" \
        --data-urlencode "end=$3" --data-urlencode "step=$4" "$PROM_URL/api/v1/query_range"
}

prom_stop() {
    [ -n "$PROM_PID" ] || return 0
    kill -TERM "$PROM_PID" 2>/dev/null
    if ! prom_wait_gone "$PROM_PID" "${PROM_STOP_SECONDS:-10}"; then
        prom_log "still running after TERM; killing it"
        kill -KILL "$PROM_PID" 2>/dev/null
    fi
    wait "$PROM_PID" 2>/dev/null
    PROM_PID=
}
