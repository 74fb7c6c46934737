#!/bin/sh
# The Prometheus harness end to end: a real prometheus scrapes a metrics page
# served on loopback by tests/metrics_server.c, and the value comes back
# through the HTTP API; a changed value is scraped again; stopping stops it.
# Skipped (77) where prometheus is not installed.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib/prometheus.sh
fail() { echo "FAIL: $*"; exit 1; }

prom_init
B=${PFLEX_BUILD:-build}
S="$B/tests/metrics_server"
[ -x "$S" ] || fail "$S not built (make test-bins)"

printf '# HELP pflex_harness_value A value the test sets.\n# TYPE pflex_harness_value gauge\npflex_harness_value{gpu="0"} 42\n' > "$PROM_DIR/metrics"
"$S" "$PROM_DIR/port" "$PROM_DIR/metrics" 120 &
prom_track $!
i=0
while [ ! -s "$PROM_DIR/port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$PROM_DIR/port" ] || fail "metrics_server wrote no port"
port=$(cat "$PROM_DIR/port")
curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" | grep -q '^pflex_harness_value{gpu="0"} 42$' \
    || fail "metrics_server does not serve the page"

prom_start "127.0.0.1:$port" || fail "prometheus did not start"
curl -sf --max-time 2 "$PROM_URL/-/ready" >/dev/null || fail "not ready after prom_start"
prom_wait_value 'pflex_harness_value{gpu="0"}' 42 30 || fail "42 never came back through the API"
prom_wait_value 'up{job="harness"}' 1 10 || fail "target not up"
prom_wait_up 1 10 || fail "prom_wait_up 1"
prom_query 'pflex_harness_value' | grep -q '"status":"success"' || fail "query status"
# the harness reads what is scraped now, not a stale value: change it
printf 'pflex_harness_value{gpu="0"} 17\n' > "$PROM_DIR/metrics.new"
mv "$PROM_DIR/metrics.new" "$PROM_DIR/metrics"
prom_wait_value 'pflex_harness_value{gpu="0"}' 17 30 || fail "17 never came back"
# the range API: a matrix, whose samples include both values
now=$(date +%s)
prom_query_range 'pflex_harness_value{gpu="0"}' $((now - 60)) $((now + 1)) 1 > "$PROM_DIR/range" \
    || fail "query_range"
tr -d ' \n' < "$PROM_DIR/range" > "$PROM_DIR/range1"
grep -q '"resultType":"matrix"' "$PROM_DIR/range1" || fail "query_range is not a matrix"
grep -q ',"42"\]' "$PROM_DIR/range1" && grep -q ',"17"\]' "$PROM_DIR/range1" \
    || fail "query_range lacks 42 or 17: $(cat "$PROM_DIR/range1")"
# a metric nobody serves has no value
[ -z "$(prom_value 'pflex_no_such_metric')" ] || fail "a value for a metric never served"

url=$PROM_URL
pid=$PROM_PID
prom_stop
kill -0 "$pid" 2>/dev/null && fail "prometheus still running after prom_stop"
curl -sf --max-time 2 "$url/-/ready" >/dev/null 2>&1 && fail "still answering after prom_stop"
echo "ok"
