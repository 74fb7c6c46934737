#!/bin/sh
# The read-only NVML (tools/device/nvml_readonly.c) in front of the fake
# NVML: pflex reads through it what the fake reports, and every command that
# sets a limit (sweep --backend nvml, apply --local, agent --backend nvml)
# fails with NVML's "Insufficient Permissions", a clear error and its exit
# status, while the fake's limits never move and each refused call is said
# on stderr.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 120 sh "$0" "$@"
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
SHIM="${PFLEX_BUILD:-build}/nvml-readonly/libnvml_readonly.so"
[ -f "$FAKE" ] || { echo "the fake NVML library is not built"; exit 77; }
[ -f "$SHIM" ] || { echo "the read-only NVML is not built (make nvml-readonly)"; exit 77; }
FAKE=$(cd "$(dirname "$FAKE")" && pwd)/$(basename "$FAKE")
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
data="$(dirname "$0")/../data"
export FAKE_NVML_STATE="$tmp/state" PFLEX_NVML_LIB="$SHIM" NVML_REAL_LIB="$FAKE" \
       PFLEX_STATE_DIR="$tmp/run"
unset FAKE_NVML_FAIL FAKE_NVML_RANGE
refused='nvml_readonly: refused nvmlDeviceSetPowerManagementLimit (refusal 1)'
limits() { grep 'limit_mw=' "$FAKE_NVML_STATE"; }
untouched() {   # WHAT: the fake's limits are still what they were
    limits >"$tmp/limits.now"
    cmp -s "$tmp/limits.0" "$tmp/limits.now" || fail "$1 changed a limit: $(cat "$tmp/limits.now")"
}
# said ERR WHAT PATTERN: the error names NVML's refusal, the shim said it
said() {
    grep -q "$3" "$1" || fail "$2: no clear error: $(cat "$1")"
    grep -qF "$refused" "$1" || fail "$2: the refusal is not on stderr: $(cat "$1")"
}

# Reads: what the fake reports, through the shim, and nothing refused.
printf 'gpu0.demand_mw=512000\ngpu1.name=NVIDIA H100 80GB HBM3\n' >"$FAKE_NVML_STATE"
"$PFLEX" telemetry --nvml --samples 2 --interval-ms 100 --job ro --host n1 --csv \
    >"$tmp/ro.csv" 2>"$tmp/err" || fail "telemetry through the shim: exit $?: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "telemetry through the shim wrote to stderr: $(cat "$tmp/err")"
limits >"$tmp/limits.0"
[ "$(grep -c '^ro,n1,0,,.*,DCGM_FI_DEV_POWER_USAGE,512$' "$tmp/ro.csv")" -eq 2 ] \
    || fail "GPU 0 power is not the fake's 512 W"
[ "$(grep -c '^ro,n1,1,,.*,DCGM_FI_DEV_ENFORCED_POWER_LIMIT,700$' "$tmp/ro.csv")" -eq 2 ] \
    || fail "GPU 1 enforced limit is not the fake's 700 W"
grep -q '^ro,n1,0,,.*,DCGM_FI_PROF_DRAM_ACTIVE,0.470*[0-9]*$' "$tmp/ro.csv" || fail "no GPM metrics through the shim"
# The same fields and values as the fake read directly, times aside.
PFLEX_NVML_LIB="$FAKE" "$PFLEX" telemetry --nvml --samples 2 --interval-ms 100 --job ro --host n1 \
    --csv >"$tmp/direct.csv" || fail "telemetry on the fake: exit $?"
cut -d, -f1-4,6- "$tmp/ro.csv" | grep -v TOTAL_ENERGY >"$tmp/a"
cut -d, -f1-4,6- "$tmp/direct.csv" | grep -v TOTAL_ENERGY >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || fail "reads differ through the shim: $(diff "$tmp/a" "$tmp/b" | head -5)"
"$PFLEX" sweep --backend nvml --list >"$tmp/list" 2>"$tmp/err" || fail "--list: exit $?"
grep -q '^1 *NVIDIA H100 80GB HBM3 ' "$tmp/list" || fail "--list: not the fake's name: $(cat "$tmp/list")"
[ -s "$tmp/err" ] && fail "--list wrote to stderr: $(cat "$tmp/err")"
untouched "reading"

# pflex sweep --backend nvml: exit 1 at the first cap.
"$PFLEX" sweep --backend nvml --gpus 0,1 --caps 600,500 --window 0.2 --settle 0.02 --power-only \
    >"$tmp/sweep.csv" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "sweep: exit $rc, expected 1: $(cat "$tmp/err")"
said "$tmp/err" sweep 'pflex sweep: cap 600 W: GPU 0 (NVIDIA H200): setting the power limit to 600 W: Insufficient Permissions (NVML_ERROR_NO_PERMISSION)'
[ "$(wc -l <"$tmp/sweep.csv")" -eq 1 ] || fail "sweep: rows written: $(cat "$tmp/sweep.csv")"
untouched "sweep"

# pflex apply --local: exit 1, no cap listed as applied.
"$PFLEX" allocate "$data/sweep_basic.csv" --reduce 0.2 --json >"$tmp/plan.json" || fail "allocate"
printf '{"jobs": {"alpha": [1]}}\n' >"$tmp/map.json"
"$PFLEX" apply "$tmp/plan.json" --local --job-map "$tmp/map.json" --lease 30 --json \
    >"$tmp/apply.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "apply --local: exit $rc, expected 1: $(cat "$tmp/err")"
said "$tmp/err" "apply --local" 'pflex apply: GPU 1 (NVIDIA H100 80GB HBM3): setting the power limit to [0-9.]* W: Insufficient Permissions (NVML_ERROR_NO_PERMISSION)'
grep -q '"applied": \[\]' "$tmp/apply.json" || fail "apply --local lists a cap as applied: $(cat "$tmp/apply.json")"
untouched "apply --local"

# pflex agent --backend nvml: it starts and serves reads; a PUT of caps is
# answered 502 with the refusal, nothing is in force, and it stops cleanly.
start_agent "$tmp/agent.log" --backend nvml --token-file "$tmp/token" --interval 0.1 \
    || fail "the agent did not start through the shim"
[ "$(metric DCGM_FI_DEV_POWER_USAGE 0)" = 512 ] || fail "agent: GPU 0 power is not the fake's"
http PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 400}], "lease_s": 30}' "$TOKEN" >"$tmp/status"
st=$(cat "$tmp/status")
[ "$st" = 502 ] || fail "agent: a cap set through the read-only NVML answered $st, not 502: $(cat "$tmp/body")"
tr -d '\n' <"$tmp/body" | grep -q '"applied": \[\], "errors": \[{"gpu": 0, "error": "GPU 0 (NVIDIA H200): setting the power limit to 400 W: Insufficient Permissions (NVML_ERROR_NO_PERMISSION)' \
    || fail "agent: the answer does not carry the refusal: $(cat "$tmp/body")"
[ "$(metric pflex_lease_active 0)" = 0 ] || fail "agent: a lease is active after the refusal"
untouched "agent"
kill -TERM $apid
wait $apid
rc=$?
agents=""
[ $rc -eq 0 ] || fail "agent: exit $rc on SIGTERM"
grep -qF "$refused" "$tmp/agent.log" || fail "agent: the refusal is not in its log"
untouched "agent's exit"

# NVML_REAL_LIB naming the shim itself: an error, not a loop.
NVML_REAL_LIB="$(cd "$(dirname "$SHIM")" && pwd)/$(basename "$SHIM")" \
    "$PFLEX" telemetry --nvml --samples 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "shim as its own real NVML: exit $rc"
grep -q 'NVML_REAL_LIB names this read-only library' "$tmp/err" || fail "shim as its own: $(cat "$tmp/err")"
echo ok
