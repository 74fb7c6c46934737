#!/bin/sh
# A damaged database: 8 KB of garbage written in the middle of the
# controller's database file (it started without a word, its targets and
# audit read from whatever was left).  Now: refused at start, exit 2, the
# message naming the file and quick_check's finding; --db-recover moves it
# (and its -wal, -shm) aside and starts on a new one, loudly, and the
# controller then runs its periods with its --target in force.  One sim
# agent on loopback.  Bounded: 60 s.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT PIPE
. "$(dirname "$0")/lib/agent.sh"

start_agent "$tmp/a.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --sim-job llama-8b-pretrain-h200 --hostname node-d --state-dir "$tmp/sa" || fail "agent"
aport=$port
ctl() {
    "$PFLEX" controller run --agent "http://127.0.0.1:$aport" --token-file "$tmp/token" --period 0.05 \
        --lease 2 --target "3.5kW,for=1h,confirm=yes" --db "$tmp/ctl.db" "$@"
}

# a database of a few hundred periods, closed cleanly (checkpointed)
ctl --periods 150 --log "$tmp/c0.log" || fail "the first run failed"
size=$(stat -c %s "$tmp/ctl.db")
[ "$size" -ge 65536 ] || fail "the database is only $size bytes"
[ ! -e "$tmp/ctl.db-wal" ] || [ ! -s "$tmp/ctl.db-wal" ] || fail "the database was not checkpointed"
head -c 8192 /dev/urandom | dd of="$tmp/ctl.db" bs=1 seek=$((size / 2 / 4096 * 4096)) conv=notrunc 2>/dev/null
cp "$tmp/ctl.db" "$tmp/garbled.db"

ctl --periods 3 --log "$tmp/c1.log" 2>"$tmp/err1"
rc=$?
[ $rc -eq 2 ] || fail "a damaged database: exit $rc, expected 2: $(cat "$tmp/err1")"
grep -q "$tmp/ctl.db: the database is damaged (" "$tmp/err1" || fail "the message: $(cat "$tmp/err1")"
grep -q "\-\-db-recover" "$tmp/err1" || fail "the message does not say --db-recover: $(cat "$tmp/err1")"
cmp -s "$tmp/ctl.db" "$tmp/garbled.db" || fail "the damaged database was changed"
echo "damaged: refused, exit 2: $(cat "$tmp/err1")"

ctl --periods 5 --log "$tmp/c2.log" --db-recover 2>"$tmp/err2" || fail "--db-recover: exit $?: $(cat "$tmp/err2")"
aside=$(ls "$tmp"/ctl.db.damaged-* 2>/dev/null | head -1)
[ -n "$aside" ] || fail "--db-recover: nothing moved aside: $(ls "$tmp")"
cmp -s "$aside" "$tmp/garbled.db" || fail "--db-recover: $aside is not the damaged file"
grep -q "WARNING: $tmp/ctl.db was damaged" "$tmp/err2" || fail "--db-recover: no warning: $(cat "$tmp/err2")"
grep -q "WARNING: .* moved to $aside" "$tmp/c2.log" || fail "--db-recover: not logged"
n=$(grep -c "period [0-9]*: limit 3500 W" "$tmp/c2.log")
[ "$n" -eq 5 ] || fail "--db-recover: $n periods at the target, expected 5"
"$PFLEX" controller history --db "$tmp/ctl.db" --what periods | jq -e '.periods | length == 5' >/dev/null \
    || fail "--db-recover: the new database does not hold the 5 periods"
echo "--db-recover: moved to $(basename "$aside"), 5 periods at 3500 W on a new database"
