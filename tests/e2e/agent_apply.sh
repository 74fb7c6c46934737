#!/bin/sh
# pflex apply: a plan of `pflex allocate --json` put into force through an
# agent (caps by the agent's job map, read back) and locally through the
# limit guard against the fake NVML (held for the lease, then restored).
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
data="$(dirname "$0")/../data"

"$PFLEX" allocate "$data/sweep_basic.csv" --reduce 0.2 --json >"$tmp/plan.json" || fail "allocate"
# The plan's own caps, to compare with what the agent reports in force.
cap_alpha=$(tr -d ' \n' <"$tmp/plan.json" | sed 's/.*"job":"alpha","gpus":[0-9]*,[^}]*"cap_w":\([0-9.]*\).*/\1/')
[ -n "$cap_alpha" ] || fail "no cap for alpha in the plan"

start_agent "$tmp/a.log" --backend sim --gpus 8 --state-dir "$tmp/run" --token-file "$tmp/token" \
    --interval 0.1 || fail "the agent did not start"
url="http://127.0.0.1:$port"
expect 200 PUT /v1/jobs/alpha '{"gpus": [0, 1, 2, 3, 4, 5, 6, 7]}' "$TOKEN"
"$PFLEX" apply "$tmp/plan.json" --agent "$url" --token-file "$tmp/token" --lease 30 --json \
    >"$tmp/out.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "apply --agent failed"; }
grep -q '"job": "alpha"' "$tmp/out.json" || fail "apply does not print alpha"
grep -q '"reason": "not in the agent' "$tmp/out.json" || fail "beta (not on this node) is not listed as skipped"
for g in 0 7; do
    v=$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT $g)
    # caps go to the GPU in whole mW, as NVML takes them: within half a mW
    awk -v a="$v" -v b="$cap_alpha" 'BEGIN { exit !(a - b <= 5e-4 && b - a <= 5e-4) }' \
        || fail "GPU $g at $v W, the plan says $cap_alpha W"
done
[ "$(metric pflex_lease_active 3)" = 1 ] || fail "no lease on GPU 3"
# Partial: exit 0 (above), the job left out named on stderr as well.
grep -q "skipped 1 job (not in the agent's job map): beta" "$tmp/err" \
    || { cat "$tmp/err"; fail "partial apply: beta not named on stderr"; }
# A plan none of whose jobs the agent holds: nothing set, exit 4, the jobs named.
sed 's/"job": "alpha"/"job": "ghost_1"/' "$tmp/plan.json" >"$tmp/none.json"
"$PFLEX" apply "$tmp/none.json" --agent "$url" --token-file "$tmp/token" --json \
    >"$tmp/out.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 4 ] || { cat "$tmp/err"; fail "a plan with no job on the node: exit $rc, expected 4"; }
grep -q "skipped 2 jobs (not in the agent's job map): ghost_1 beta" "$tmp/err" \
    || { cat "$tmp/err"; fail "exit 4 does not name the skipped jobs"; }
grep -q 'nothing applied' "$tmp/err" || fail "exit 4 does not say nothing was applied"
grep -q '"applied": \[\]' "$tmp/out.json" && grep -q '"job": "ghost_1"' "$tmp/out.json" \
    || { cat "$tmp/out.json"; fail "exit 4: the JSON does not list the skipped jobs"; }
# A plan the agent refuses (a cap above the range): exit 2, nothing changes.
sed 's/"cap_w": [0-9.]*/"cap_w": 900.0/' "$tmp/plan.json" >"$tmp/bad.json"
"$PFLEX" apply "$tmp/bad.json" --agent "$url" --token-file "$tmp/token" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "a refused plan: exit $rc, expected 2"
grep -q 'outside the allowed range 200-700 W' "$tmp/err" || fail "the refusal does not name the range"
[ ! -s "$tmp/out" ] || fail "stdout written on a refused plan"
# No token: 401, exit 1.
"$PFLEX" apply "$tmp/plan.json" --agent "$url" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q 'HTTP 401' "$tmp/err" || fail "apply without a token did not fail with 401"
# Malformed plans: exit 2, nothing on stdout.
echo '{"jobs": [{"job": "alpha"}]}' >"$tmp/m.json"
"$PFLEX" apply "$tmp/m.json" --agent "$url" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q 'cap_w' "$tmp/err" || fail "a plan without cap_w"
echo '{"jobs": [' >"$tmp/m.json"
"$PFLEX" apply "$tmp/m.json" --agent "$url" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && [ ! -s "$tmp/out" ] || fail "a plan that is not JSON"
stop_agents

# --local through the guard, against the fake NVML.
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$FAKE" PFLEX_STATE_DIR="$tmp/lrun"
unset FAKE_NVML_FAIL FAKE_NVML_RANGE
limit() { sed -n "s/^gpu$1.limit_mw=//p" "$FAKE_NVML_STATE"; }
printf '{"jobs": {"alpha": [1]}}\n' >"$tmp/map.json"
"$PFLEX" apply "$tmp/plan.json" --local --job-map "$tmp/map.json" --lease 2 >"$tmp/lout" 2>"$tmp/lerr" &
ap=$!
i=0
until [ -s "$tmp/lout" ]; do
    [ $i -lt 200 ] || fail "apply --local printed nothing"
    sleep 0.05; i=$((i + 1))
done
want=$(awk -v c="$cap_alpha" 'BEGIN { printf "%.0f", c * 1000 }')   # nearest mW, ties to even, as the NVML backend rounds
[ "$(limit 1)" = "$want" ] || fail "GPU 1 at $(limit 1) mW during the lease, expected $want"
[ "$(limit 0)" = 700000 ] || fail "GPU 0 (not in the map) changed"
grep -q '^alpha .* 1 ' "$tmp/lout" || fail "apply --local does not print GPU 1"
# While it holds GPU 1, an agent on the node refuses to start.
"$PFLEX" agent --backend nvml --listen 127.0.0.1:0 2>"$tmp/second.log"
[ $? -eq 1 ] && grep -q "pflex apply, pid $ap" "$tmp/second.log" || fail "an agent started beside apply --local"
wait $ap
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/lerr"; fail "apply --local: exit $rc"; }
[ "$(limit 1)" = 700000 ] || fail "GPU 1 not restored after the lease"
grep -q 'original power limits restored' "$tmp/lerr" || fail "the restore is not said"
# --local, a map that holds none of the plan's jobs: nothing set, exit 4.
printf '{"jobs": {"other": [2]}}\n' >"$tmp/map0.json"
cp "$FAKE_NVML_STATE" "$tmp/state.before"
"$PFLEX" apply "$tmp/plan.json" --local --job-map "$tmp/map0.json" --lease 60 >"$tmp/lout" 2>"$tmp/lerr"
rc=$?
[ $rc -eq 4 ] || { cat "$tmp/lerr"; fail "apply --local with no job here: exit $rc, expected 4"; }
grep -q 'skipped 2 jobs (no GPUs of this node (see --job-map)): alpha beta' "$tmp/lerr" \
    || { cat "$tmp/lerr"; fail "apply --local exit 4 does not name the jobs"; }
cmp -s "$FAKE_NVML_STATE" "$tmp/state.before" || fail "a plan that applied nothing changed a GPU"
# SIGTERM during the lease: restored, then death by the signal.
"$PFLEX" apply "$tmp/plan.json" --local --job-map "$tmp/map.json" --lease 60 >"$tmp/lout" 2>"$tmp/lerr" &
ap=$!
i=0
until [ "$(limit 1)" = "$want" ]; do
    [ $i -lt 200 ] || fail "apply --local never set the cap"
    sleep 0.05; i=$((i + 1))
done
kill -TERM $ap
wait $ap
rc=$?
[ $rc -gt 128 ] || fail "SIGTERM: exit $rc"
[ "$(limit 1)" = 700000 ] || fail "SIGTERM: GPU 1 not restored"
echo ok
