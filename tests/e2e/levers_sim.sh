#!/bin/sh
# pflex simulate --levers end to end: a simulated sweep under a 40 % cut
# (no shared data needed): pflex's plan meets every limit the contracts
# allow, keeps every contract, keeps at least the progress of each of the
# field demonstration's policies, sits at or over the LP bound's progress
# less 1 %, gives the same result for the same seed, documents every JSON
# field in docs/levers.md, refuses bad options (exit 2); --deepest finds a
# limit and meets it; then the SRP day from the shared data with its tiers
# as contracts (skipped with a message when absent).
set -u
P=${PFLEX:-build/pflex}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v jq > /dev/null || { echo "skip: jq is not installed"; exit 77; }

"$P" sweep --job llama-8b-pretrain-h200 --repeats 1 > "$T/s.csv" || fail "sweep"
"$P" sweep --job emerald-pt-mpt-7b --repeats 1 | tail -n +2 >> "$T/s.csv" || fail "sweep 2"
A="$T/s.csv --start @1700000000 --duration 4h --target 60%,start=+1h,for=2h --floor 0.5 --lever-period 10m"
timeout 120 "$P" simulate $A --levers all --flex-as contract --json > "$T/a.json" || fail "simulate exit $?"
timeout 120 "$P" simulate $A --levers all --flex-as contract --json > "$T/b.json" || fail "simulate again"
[ "$(jq -S 'del(.policies[].plan_s_max, .policies[].plan_s_mean)' "$T/a.json")" = \
  "$(jq -S 'del(.policies[].plan_s_max, .policies[].plan_s_mean)' "$T/b.json")" ] || fail "the same seed gives another result"

check() {  # the plan's promises on a JSON document
    f=$1
    for p in plan oracle; do
        jq -e ".policies.$p.periods_over_feasible == 0 and .policies.$p.contracts_broken == 0" "$f" > /dev/null \
            || fail "$f: $p over a feasible limit or a contract broken: $(jq -c ".policies.$p" "$f")"
    done
    # a field policy that meets every limit keeps no more progress (one
    # that does not is counted apart: its periods over)
    for p in field-dvfs field-dvfs-pause field-pause field-resize; do
        jq -e ".policies[\"$p\"].periods_over > 0 or .policies[\"$p\"].progress_s <= .policies.plan.progress_s * (1 + 1e-9)" \
            "$f" > /dev/null || fail "$f: $p kept more progress than the plan under the same limits"
    done
    # within 1 % of the bound, or the gap is the relaxation's: the oracle's
    # closed search sits as far under it
    jq -e '.plan_vs_bound_pct_of_site < 1 or (.oracle_optimal and .plan_vs_bound_pct_of_site - .oracle_gap_pct_of_site < 0.25)' \
        "$f" > /dev/null || fail "$f: the plan is 1 % or more under the bound: $(jq -c '{plan_vs_bound_pct_of_site, oracle_gap_pct_of_site}' "$f")"
}
check "$T/a.json"
# the tiers as floors: no pause or stop (T/T0 0 is under any floor)
timeout 120 "$P" simulate $A --levers all --json > "$T/f.json" || fail "simulate floors"
jq -e '.flex_as == "floor" and .policies.plan.pauses == 0 and .policies.plan.stops == 0 and .policies.plan.floor_breaches == 0' \
    "$T/f.json" > /dev/null || fail "floors: $(jq -c .policies.plan "$T/f.json")"
# as deep as the contracts allow: found, and met
timeout 120 "$P" simulate $A --levers all --flex-as contract --deepest --json > "$T/d.json" || fail "simulate --deepest"
jq -e '.deepest_cut > 0.4 and .periods_gave_way == 0' "$T/d.json" > /dev/null || fail "deepest: $(jq -c '{deepest_cut, periods_gave_way}' "$T/d.json")"
check "$T/d.json"
# the table
timeout 120 "$P" simulate $A --levers cap,pause --flex-as contract > "$T/t.txt" || fail "table"
grep -q "^plan " "$T/t.txt" && grep -q "^field-dvfs " "$T/t.txt" || fail "table: $(cat "$T/t.txt")"
# every JSON field documented
for k in $(jq -r '[paths | .[] | select(type == "string")] | unique | .[]' "$T/a.json" "$T/d.json"); do
    grep -q "\b$k\b" docs/levers.md || fail "JSON field $k not in docs/levers.md"
done
# bad options
for bad in "--levers nap" "--flex-as maybe" "--lever-period 0s" "--resize-eff 2" "--gpu-kind Z80"; do
    "$P" simulate $A $bad > "$T/o" 2> "$T/e"; rc=$?
    [ $rc -eq 2 ] || fail "$bad: exit $rc"
    [ -s "$T/e" ] && [ ! -s "$T/o" ] || fail "$bad: no message, or output"
done

D=${SHARED_DATA:-}
if [ -z "$D" ] || [ ! -d "$D/emerald-demo" ]; then
    echo "levers_sim: skip the SRP day: no shared data (SHARED_DATA)"
    echo "levers_sim: ok"
    exit 0
fi
timeout 300 "$P" simulate --day srp --data "$D" --levers all --flex-as contract --json > "$T/srp.json" \
    || fail "srp exit $?"
check "$T/srp.json"
echo "levers_sim: ok"
