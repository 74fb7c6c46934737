#!/bin/sh
# An acknowledged target survives a power cut.  The controller's database
# is on an ext4 filesystem of its own (a loop device); right after a PUT
# /v1/target is answered 200 the power is cut: the device's blocks as the
# disk holds them (read past every cache, O_DIRECT) are copied and the
# controller killed (-9).  Mounted from that copy (its journal replayed,
# as after a reboot), the controller is restarted on the database: both
# the command line's target and the API's are in force, and the site's
# power is counted against the API's (the tighter).  With
# synchronous=NORMAL both were lost: WAL commits are written, not synced.
# Root and a loop device needed (skip 77 otherwise).  Bounded: 60 s.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'loopfs_thaw; stop_agents; loopfs_cleanup; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT PIPE
. "$(dirname "$0")/lib/agent.sh"
. "$(dirname "$0")/lib/loopfs.sh"
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }
loopfs_mount 32

start_agent "$tmp/a.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --sim-job llama-8b-pretrain-h200 --hostname node-p --state-dir "$tmp/sa" || fail "agent"
aport=$port
start() {  # start DB [ARGS]: the controller on DB, its API port in $port
    db=$1; shift
    rm -f "$tmp/cport"
    "$PFLEX" controller run --agent "http://127.0.0.1:$aport" --token-file "$tmp/token" \
        --api-token-file "$tmp/token" --listen 127.0.0.1:0 --port-file "$tmp/cport" --period 0.2 \
        --lease 2 --db "$db" --log "$tmp/ctl.log" "$@" &
    cpid=$!
    agents="$agents $cpid"
    i=0
    until [ -s "$tmp/cport" ]; do
        kill -0 $cpid 2>/dev/null || fail "the controller exited"
        [ $i -lt 200 ] || fail "the controller did not start"; sleep 0.05; i=$((i + 1))
    done
    port=$(cat "$tmp/cport")
}

start "$tmp/fs/ctl.db" --target "4.5kW,for=1h,confirm=yes"
expect 200 PUT /v1/target '{"target": "3.5kW,for=1h", "id": "cut", "confirm": true}' "$TOKEN"
# the power cut: what the disk holds now, nothing more
dd if="$loop" of="$tmp/snap.img" bs=1M iflag=direct 2>/dev/null || fail "cannot read $loop"
kill -KILL "$cpid"; wait "$cpid" 2>/dev/null
snaploop=$(losetup -f --show "$tmp/snap.img") || { echo "skip: no second loop device"; exit 77; }
mkdir -p "$tmp/snap"
mount "$snaploop" "$tmp/snap" || fail "the disk after the cut does not mount"
[ -e "$tmp/snap/ctl.db" ] || fail "after the cut: no database on the disk: $(ls -la "$tmp/snap")"

mv "$tmp/ctl.log" "$tmp/ctl0.log"
start "$tmp/snap/ctl.db"
expect 200 GET /v1/status
got=$(jq -r '[.targets[] | "\(.source) \(.id) \(.value)"] | sort | join(";")' "$tmp/body")
case "$got" in
*"api cut 3500"*) ;;
*) fail "after the power cut the acknowledged API target is gone: targets '$got'" ;;
esac
case "$got" in
*"cli "*4500*) ;;
*) fail "after the power cut the command line's target is gone: targets '$got'" ;;
esac
# the site's samples against the target in force: the API's 3.5 kW, from
# 2 s after the restart (a GPU's reading is a mean over its last second,
# as NVML's is, and the first periods are read under the caps before)
i=0
until [ "$(grep -c 'period [0-9]*: limit 3500 W' "$tmp/ctl.log")" -ge 16 ]; do
    [ $i -lt 200 ] || fail "after the restart: not 16 periods at 3500 W"; sleep 0.05; i=$((i + 1))
done
over=$(awk '/ period [0-9]+: limit 3500 W/ { n++; if (n > 10 && ($12 == "nan" || $12 > 3500 * 1.02)) print }' \
    "$tmp/ctl.log" | head -2)
[ -z "$over" ] || fail "after the restart, the site over the target: $over"
echo "power cut after an acknowledged PUT: restarted with '$got' in force, the site under 3500 W"
