# Sourced by the controller's disk fault tests: the controller on the
# database $1 (on $tmp/fs), period 0.1 s, an event of 3.5 kW in force, its
# API on $port,
# under a systemd-like watchdog whose pings ($NOTIFY_SOCKET) are written
# to $tmp/notify.log, one line each ("<monotonic s> WATCHDOG=1"), by a
# Python listener.  Needs $tmp, $aport, lib/agent.sh; python3 (skip 77).
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not installed (the watchdog's listener)"; exit 77; }

start_watched() {
    python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as f:
    while True:
        d = s.recv(4096).decode(errors="replace")
        for line in d.splitlines():
            f.write("%.3f %s\n" % (time.monotonic(), line))
        f.flush()
' "$tmp/notify.sock" "$tmp/notify.log" &
    agents="$agents $!"
    i=0
    until [ -S "$tmp/notify.sock" ]; do [ $i -lt 100 ] || fail "no listener"; sleep 0.05; i=$((i + 1)); done
    NOTIFY_SOCKET="$tmp/notify.sock" WATCHDOG_USEC=1000000 "$PFLEX" controller run \
        --agent "http://127.0.0.1:$aport" --token-file "$tmp/token" --period 0.1 --lease 2 \
        --target "3.5kW,for=1h,confirm=yes" --db "$1" --log "$tmp/ctl.log" --listen 127.0.0.1:0 \
        --port-file "$tmp/cport" &
    cpid=$!
    agents="$agents $cpid"
    i=0
    until [ "$(cat "$tmp/ctl.log" 2>/dev/null | grep -c 'period [0-9]*: limit')" -ge 15 ]; do
        [ $i -lt 200 ] || fail "the controller ran no period"; sleep 0.05; i=$((i + 1))
    done
    port=$(cat "$tmp/cport")    # the controller's API, for metric
}

monotonic() { python3 -c 'import time; print("%.3f" % time.monotonic())'; }

# watched SINCE WHAT: from SINCE (monotonic s) to now, the controller's
# periods went on (at least 2 a second, each at 3.5 kW, the site's power
# read in 4 of 5 and under it, none failed) and the watchdog was fed (at
# least 2 pings a second)
watched() {
    until_s=$(monotonic)
    span=$(awk -v a="$1" -v b="$until_s" 'BEGIN { print b - a }')
    # the log's stamps are the real clock: its last SPAN seconds
    awk -v span="$span" '
        / period [0-9]+: limit / {
            split($1, d, "T"); split(d[2], h, ":"); sub("Z", "", h[3])
            t[++n] = h[1] * 3600 + h[2] * 60 + h[3]; line[n] = $0; lim[n] = $5; meas[n] = $12
        }
        END {
            for (i = 1; i <= n; i++) if (t[i] >= t[n] - span) print lim[i], meas[i]
        }' "$tmp/ctl.log" >"$tmp/p"
    n=$(wc -l <"$tmp/p")
    want=$(awk -v s="$span" 'BEGIN { print int(2 * s) }')
    [ "$n" -ge "$want" ] || fail "$2: $n periods in $span s, expected $want or more"
    bad=$(awk '$1 != "3500" || ($2 != "nan" && $2 > 3500 * 1.02)' "$tmp/p" | sed 2q | tr '\n' ';')
    [ -z "$bad" ] || fail "$2: a period not at 3500 W, or the site over it: $bad"
    # a period without a fresh reading (nan) is no sample; most have one
    nan=$(awk '$2 == "nan"' "$tmp/p" | wc -l)
    [ $((nan * 5)) -le "$n" ] || fail "$2: $nan of $n periods without the site's power"
    ! grep -q "period failed" "$tmp/ctl.log" || fail "$2: $(grep -m1 'period failed' "$tmp/ctl.log")"
    pings=$(awk -v a="$1" '$1 >= a && $2 == "WATCHDOG=1"' "$tmp/notify.log" | wc -l)
    [ "$pings" -ge "$want" ] || fail "$2: the watchdog fed $pings times in $span s, expected $want or more"
    echo "$2: $n periods in $span s at 3500 W, the site under it, the watchdog fed $pings times"
}
