#!/bin/sh
# pflex agent --backend nvml against the fake NVML library: nothing says
# "restored" unless the limit reads back so.  A GPU found capped at start
# (no state file explains it) goes back to its default before the agent
# serves (--keep-found-limit keeps it); an empty state file left by a
# crash is reported and the default restored; a set the driver answers
# with success but does not apply is a failure in the reply, the log and
# the exit code; caps are compared in mW, as NVML takes them.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL FAKE_NVML_RANGE
nv="--backend nvml --token-file $tmp/token --interval 0.1"
limit() { sed -n "s/^gpu$1.limit_mw=//p" "$FAKE_NVML_STATE"; }
fake_set() {  # KEY VALUE: change the fake's state under the agent
    sed "s/^$1=.*/$1=$2/" "$FAKE_NVML_STATE" >"$tmp/edit" && mv "$tmp/edit" "$FAKE_NVML_STATE"
}
stop() {  # the agent's exit status
    kill -TERM $apid; wait $apid
}

# Found capped: GPU 0 at 300 W, default 600 W, no state file.  The agent
# restores 600 W before serving, and says so; everything it reports is
# what the device reads.
printf 'gpu0.default_mw=600000\ngpu0.limit_mw=300000\n' >"$FAKE_NVML_STATE"
start_agent "$tmp/a.log" $nv || fail "the agent did not start"
[ "$(limit 0)" = 600000 ] || fail "GPU 0 found capped is still at $(limit 0) mW"
grep -q 'the limit found, 300 W, is not the default 600 W: taken as a cap left behind' "$tmp/a.log" \
    || fail "the cap left behind is not named"
grep -q 'GPU 0: back to its original 600 W (a cap left behind, found at start), read back' "$tmp/a.log" \
    || fail "the restore at start is not logged"
expect 200 DELETE /v1/caps "" "$TOKEN"
grep -q '"gpu": 0, [^}]*"limit_w": 600.0, "enforced_w": 600.0' "$tmp/body" \
    || fail "DELETE does not answer what the device reads: $(cat "$tmp/body")"
stop || fail "SIGTERM: exit $?"
[ "$(limit 0)" = 600000 ] || fail "SIGTERM left GPU 0 at $(limit 0) mW"
grep -q 'stopped; every GPU at its original limit (read back)' "$tmp/a.log" || fail "no exit line"

# ... and --restore-only does the same for a cap left behind.
fake_set gpu0.limit_mw 300000
"$PFLEX" agent --backend nvml --restore-only 2>"$tmp/restore.log" || fail "--restore-only failed"
[ "$(limit 0)" = 600000 ] || fail "--restore-only left GPU 0 at $(limit 0) mW"
grep -q -- '--restore-only; every GPU at its original limit (read back)' "$tmp/restore.log" \
    || fail "--restore-only: $(cat "$tmp/restore.log")"

# --keep-found-limit: the found 300 W is the original, kept and reported.
fake_set gpu0.limit_mw 300000
start_agent "$tmp/k.log" $nv --keep-found-limit || fail "the agent did not start"
[ "$(limit 0)" = 300000 ] || fail "--keep-found-limit changed GPU 0 to $(limit 0) mW"
grep -q 'the limit found, 300 W, is not the default 600 W; kept as the limit to return to' \
    "$tmp/k.log" || fail "the kept limit is not reported"
[ "$(metric pflex_gpu_original_limit_watts 0)" = 300 ] || fail "the original is not the found limit"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 250}], "lease_s": 60}' "$TOKEN"
stop || fail "SIGTERM: exit $?"
[ "$(limit 0)" = 300000 ] || fail "--keep-found-limit: SIGTERM left GPU 0 at $(limit 0) mW"

# An empty state file (a crash while it was written): reported, and the
# default restored before serving.
fake_set gpu0.limit_mw 310000
fake_set gpu1.limit_mw 320000
: >"$PFLEX_STATE_DIR/GPU-fa4e0000-0000-4000-8000-000000000000.state"
printf '{"original_w": ' >"$PFLEX_STATE_DIR/GPU-fa4e0000-0000-4000-8000-000000000001.state"
start_agent "$tmp/c.log" $nv || fail "the agent did not start beside an empty state file"
[ "$(limit 0)" = 600000 ] && [ "$(limit 1)" = 700000 ] \
    || fail "a corrupt state file left $(limit 0) $(limit 1) mW"
grep -q 'GPU 0 (GPU-fa4e0000-0000-4000-8000-000000000000): the saved original limit is unreadable .*restored the board.s default 600 W (310 W found)' \
    "$tmp/c.log" || fail "the empty state file is not reported"
grep -q 'GPU 1 (GPU-fa4e0000-0000-4000-8000-000000000001): the saved original limit is unreadable .*restored the board.s default 700 W (320 W found)' \
    "$tmp/c.log" || fail "the damaged state file is not reported"
[ -f "$PFLEX_STATE_DIR/GPU-fa4e0000-0000-4000-8000-000000000000.state.corrupt" ] \
    || fail "the damaged file is not kept aside"
[ "$(metric pflex_gpu_up 0)" = 1 ] || fail "GPU 0 not in service after the recovery"

# Caps in mW: 199.9999 W is 200000 mW, in range; 199.9994 W is not.
expect 200 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 199.9999}], "lease_s": 60}' "$TOKEN"
[ "$(limit 1)" = 200000 ] || fail "199.9999 W set GPU 1 to $(limit 1) mW"
expect 400 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 199.9994}], "lease_s": 60}' "$TOKEN"
grep -q 'GPU 1: cap 199.999 W is outside the allowed range 200-700 W (199999 mW, not in 200000-700000 mW)' \
    "$tmp/body" || fail "the mW comparison is not said: $(cat "$tmp/body")"

# A set NVML answers with success and ignores: the PUT is a failure.
fake_set gpu0.ignore_sets 1
expect 502 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 400}], "lease_s": 60}' "$TOKEN"
grep -q 'the limit reads 600 W after setting 400 W: the set did not take effect' "$tmp/body" \
    || fail "an ignored set is not reported: $(cat "$tmp/body")"
[ "$(limit 0)" = 600000 ] || fail "GPU 0 at $(limit 0) mW"
# ... and a restore the driver ignores: no "restored", the lease holds,
# the exit says so and fails.  (The failed set marks GPU 0 failing until
# the next sample reads it well.)
wait_metric pflex_gpu_up 0 1 5
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 400}], "lease_s": 60}' "$TOKEN"
fake_set gpu0.ignore_sets -1
expect 502 DELETE '/v1/caps?gpu=0' "" "$TOKEN"
grep -q '"restored": \[\]' "$tmp/body" || fail "DELETE says restored: $(cat "$tmp/body")"
grep -q 'restoring the power limit to 600 W failed 4 times: the limit reads 400 W after setting 600 W' \
    "$tmp/body" || fail "DELETE does not say why: $(cat "$tmp/body")"
grep -q '"limit_w": 400.0' "$tmp/body" || fail "DELETE does not report the limit read back"
[ "$(metric pflex_lease_active 0)" = 1 ] || fail "the lease of an unrestored GPU is gone"
stop
rc=$?
[ $rc -eq 1 ] || fail "exit $rc with GPU 0 not restored"
grep -q 'stopped; 1 GPU at the original limit (read back); 1 not restored' "$tmp/c.log" \
    || fail "the exit line does not say GPU 0 is not restored"
grep -q 'every GPU at its original limit' "$tmp/c.log" && fail "the log claims every GPU restored"
[ -f "$PFLEX_STATE_DIR/GPU-fa4e0000-0000-4000-8000-000000000000.state" ] \
    || fail "the original of the unrestored GPU is not kept"
# The driver listens again: the next start restores it.
fake_set gpu0.ignore_sets 0
"$PFLEX" agent --backend nvml --restore-only 2>"$tmp/restore.log" || fail "--restore-only failed"
[ "$(limit 0)" = 600000 ] || fail "--restore-only left GPU 0 at $(limit 0) mW"
echo ok
