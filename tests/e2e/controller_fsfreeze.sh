#!/bin/sh
# The database's filesystem frozen (fsfreeze: every write to it blocks
# until thawed) for 3 s mid-event.  The period loop blocked for as long;
# now the periods go on at their period with the event in force, their
# records queued for the audit's writer (at most 32, then dropped and
# counted), "audit degraded" logged, and the watchdog stays fed; thawed,
# the writer catches up.  Stopped while frozen again, it says what it
# leaves unwritten after a second and exits 0 once thawed.  Root and a loop device needed (skip 77
# otherwise).  Bounded: 60 s.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'loopfs_thaw; stop_agents; loopfs_cleanup; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT PIPE
. "$(dirname "$0")/lib/agent.sh"
. "$(dirname "$0")/lib/loopfs.sh"
. "$(dirname "$0")/lib/ctlwatch.sh"
loopfs_mount 32

start_agent "$tmp/a.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --sim-job llama-8b-pretrain-h200 --hostname node-z --state-dir "$tmp/sa" || fail "agent"
aport=$port
start_watched "$tmp/fs/ctl.db"

t=$(monotonic)
loopfs_freeze
sleep 3
watched "$t" "frozen 3 s"
grep -m1 "audit degraded" "$tmp/ctl.log" | sed 's/^/  /'
grep -q "audit degraded" "$tmp/ctl.log" || fail "frozen: the audit never said it was degraded"
[ "$(metric pflex_controller_audit_degraded)" = 1 ] || fail "frozen: pflex_controller_audit_degraded not 1"
loopfs_thaw
i=0
until grep -q "audit: writing again" "$tmp/ctl.log"; do
    [ $i -lt 100 ] || fail "thawed: the audit never wrote again"; sleep 0.05; i=$((i + 1))
done
sleep 0.3
dropped=$(metric pflex_controller_audit_dropped_total)

# stopped while frozen: the writer gets a second, then the controller says
# what it left unwritten and goes (its blocked thread ends at the thaw)
loopfs_freeze
sleep 0.5
kill -TERM "$cpid"
i=0
until grep -q "records left unwritten" "$tmp/ctl.log"; do
    [ $i -lt 60 ] || fail "stopped while frozen: it never said what it left unwritten"; sleep 0.05; i=$((i + 1))
done
left=$(sed -n "s/.*audit: \([0-9]*\) periods' records left unwritten.*/\1/p" "$tmp/ctl.log")
loopfs_thaw
wait "$cpid" || fail "stopped while frozen: exit $?"
echo "stopped while frozen: $left records left unwritten, exit 0 at the thaw"
# every period in the audit but those dropped (the queue holds 32) and
# those left at the stop (the one blocked at the stop may have landed)
n=$("$PFLEX" controller history --db "$tmp/fs/ctl.db" --what periods --limit 100000 | jq '.periods | length')
ran=$(grep -c ' period [0-9]*: limit' "$tmp/ctl.log")
lost=$((ran - n))
[ "$lost" -ge $((dropped + left - 1)) ] && [ "$lost" -le $((dropped + left)) ] \
    || fail "$n periods in the audit, $ran run, $dropped dropped, $left left unwritten"
echo "the audit: $n periods recorded of $ran run ($dropped dropped, $left left at the stop)"
