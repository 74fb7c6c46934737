#!/bin/sh
# The database's disk full.  The controller's database is on an ext4
# filesystem of its own (a loop device, 16 MB), filled up mid-event: its
# periods go on at their period with the event in force, their audit
# "degraded" (logged), never "failed", and the watchdog stays fed (every
# period failed, and the shipped unit restarted the controller every
# 30 s).  Space freed, the audit writes again.  Root and a loop device
# needed (skip 77 otherwise).  Bounded: 60 s.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'loopfs_thaw; stop_agents; loopfs_cleanup; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT PIPE
. "$(dirname "$0")/lib/agent.sh"
. "$(dirname "$0")/lib/loopfs.sh"
. "$(dirname "$0")/lib/ctlwatch.sh"
loopfs_mount 16

start_agent "$tmp/a.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --sim-job llama-8b-pretrain-h200 --hostname node-f --state-dir "$tmp/sa" || fail "agent"
aport=$port
start_watched "$tmp/fs/ctl.db"

dd if=/dev/zero of="$tmp/fs/fill" bs=64k 2>/dev/null
df -k "$tmp/fs" | awk 'NR == 2 && $4 > 64 { exit 1 }' || fail "the disk is not full: $(df -k "$tmp/fs" | tail -1)"
i=0
until grep -q "audit degraded" "$tmp/ctl.log"; do
    [ $i -lt 100 ] || fail "a full disk: the audit never said it was degraded"; sleep 0.05; i=$((i + 1))
done
t=$(monotonic)
sleep 2
watched "$t" "disk full"
grep -m1 "audit degraded" "$tmp/ctl.log" | sed 's/^/  /'
[ "$(metric pflex_controller_audit_degraded)" = 1 ] || fail "disk full: pflex_controller_audit_degraded not 1"
failed=$(metric pflex_controller_audit_failed_total)
[ "${failed:-0}" -gt 0 ] || fail "disk full: pflex_controller_audit_failed_total is '$failed'"
echo "disk full: /metrics says degraded, $failed records failed"

rm -f "$tmp/fs/fill"
i=0
until grep -q "audit: writing again" "$tmp/ctl.log"; do
    [ $i -lt 100 ] || fail "space freed: the audit never wrote again"; sleep 0.05; i=$((i + 1))
done
sleep 0.3
[ "$(metric pflex_controller_audit_degraded)" = 0 ] || fail "space freed: pflex_controller_audit_degraded not 0"
kill -TERM "$cpid"; wait "$cpid"
n=$("$PFLEX" controller history --db "$tmp/fs/ctl.db" --what periods --limit 100000 | jq '.periods | length')
echo "space freed: the audit writes again ($n periods recorded)"
