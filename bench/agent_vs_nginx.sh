#!/bin/sh
# The agent's reads beside nginx serving the same bytes: a sim agent (8
# GPUs, rate limits off, connection limits raised for the load), its
# /metrics and /v1/status saved to files, nginx (a user-level
# configuration in a temporary folder, loopback, daemon off) serving those
# files at the same paths, and one load generator (bench/http_load.c,
# keep-alive) driving each in turn at 1, 16 and 64 connections.  The
# servers alternate, ROUNDS times each; the medians and their ratio
# (agent / nginx requests per second) are printed.  Asserts nothing.
#
#   BUILD=build-bench sh bench/agent_vs_nginx.sh [ROUNDS [SECONDS]]
set -u
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
SECS=${2:-1.5}
LOAD=$BUILD/bench/http_load
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "  nginx: not installed (Debian nginx-light); no comparison"; exit 0; }
T=$(mktemp -d)
apid=""; npid=""
trap '[ -n "$apid" ] && kill -TERM $apid 2>/dev/null; [ -n "$npid" ] && kill -TERM $npid 2>/dev/null; wait; rm -rf "$T"' EXIT
THREADS=${AGENT_THREADS:-4}
"$BUILD/pflex" agent --backend sim --gpus 8 --listen 127.0.0.1:0 --port-file "$T/aport" \
    --state-dir "$T/run" --read-rate 0 --write-rate 0 --max-conns 256 --max-conns-per-ip 256 \
    --threads "$THREADS" 2>"$T/agent.log" &
apid=$!
i=0; until [ -s "$T/aport" ] || [ $i -ge 500 ]; do sleep 0.01; i=$((i + 1)); done
aport=$(cat "$T/aport")
mkdir -p "$T/www/v1" "$T/tmp"
curl -s "http://127.0.0.1:$aport/metrics" >"$T/www/metrics"
curl -s "http://127.0.0.1:$aport/v1/status" >"$T/www/v1/status"
# A free port for nginx: the kernel picks one, nginx takes it.
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
        || echo $((20000 + $$ % 20000)))
cat >"$T/nginx.conf" <<EOF
worker_processes auto;
pid $T/nginx.pid;
error_log $T/nginx.err warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $T/tmp; proxy_temp_path $T/tmp; fastcgi_temp_path $T/tmp;
    uwsgi_temp_path $T/tmp; scgi_temp_path $T/tmp;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$nport;
        root $T/www;
        location = /metrics { default_type "text/plain; version=0.0.4; charset=utf-8"; }
        location = /v1/status { default_type application/json; }
    }
}
EOF
"$NGINX" -e "$T/nginx.err" -p "$T" -c "$T/nginx.conf" -g 'daemon off;' &
npid=$!
i=0; until curl -s -o /dev/null "http://127.0.0.1:$nport/metrics" || [ $i -ge 300 ]; do sleep 0.01; i=$((i + 1)); done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "  agent: --threads $THREADS; nginx: worker_processes auto ($(nproc) CPUs); $ROUNDS rounds of $SECS s each, alternating; medians"
printf '  %-12s %5s %12s %12s %7s\n' path conns agent_req/s nginx_req/s ratio
for path in /metrics /v1/status; do
    for n in 1 16 64; do
        : >"$T/a"; : >"$T/n"
        r=0
        while [ $r -lt "$ROUNDS" ]; do
            "$LOAD" "$aport" "$path" "$n" "$SECS" | awk '{ print $1 }' >>"$T/a"
            "$LOAD" "$nport" "$path" "$n" "$SECS" | awk '{ print $1 }' >>"$T/n"
            r=$((r + 1))
        done
        a=$(median <"$T/a"); b=$(median <"$T/n")
        printf '  %-12s %5d %12.0f %12.0f %7.2f\n' "$path" "$n" "$a" "$b" \
            "$(awk -v a="$a" -v b="$b" 'BEGIN { print (b > 0 ? a / b : 0) }')"
    done
done
echo "  (bytes: /metrics $(wc -c <"$T/www/metrics"), /v1/status $(wc -c <"$T/www/v1/status"))"
