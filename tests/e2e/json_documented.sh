#!/bin/sh
# Every JSON field a command writes is documented: each key of pfi --json,
# allocate --json (from a sweep and from a PFI CSV), evaluate --json, sweep
# --list-presets --json and study --json (summary.json) is named in docs/
# (docs/contract.md, or the command's own page).  Needs jq.
command -v jq > /dev/null || { echo "jq is not installed"; exit 77; }
P=${PFLEX:-build/pflex}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat docs/*.md > "$T/docs"
"$P" sweep --job llama-8b-pretrain-h200 --repeats 1 > "$T/a.csv" || fail "sweep"
"$P" sweep --job emerald-pt-mpt-7b --repeats 1 | tail -n +2 >> "$T/a.csv" || fail "sweep 2"
"$P" pfi --csv "$T/a.csv" > "$T/p.csv" || fail "pfi --csv"
missing=""
check() {
    what=$1; shift
    "$P" "$@" > "$T/out.json" 2> "$T/err"; rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "$what: exit $rc ($(cat "$T/err"))"
    # keys of a map whose keys are data (pfi.by_family.<family>) are not fields
    for k in $(jq -r '[paths | . as $p | range(0; length) as $i
                | select(($p[$i] | type) == "string" and ($i == 0 or $p[$i - 1] != "by_family"))
                | $p[$i]] | unique | .[]' "$T/out.json"); do
        grep -q "\b$k\b" "$T/docs" || missing="$missing $what:$k"
    done
}
check pfi pfi --json "$T/a.csv"
check allocate allocate --json "$T/a.csv" --reduce 0.3
check allocate-pfi allocate --json --pfi "$T/p.csv" --reduce 0.3
check evaluate evaluate --json "$T/a.csv" --reduce 0.3
check presets sweep --list-presets --json
check study study --json --jobs 6 --no-charts --out "$T/study"
check simulate simulate --json "$T/a.csv" --start @1700000000 --duration 5m \
    --target 70%,start=@1700000060,for=3m --policies equal,tpw,online-cold,oracle
[ -z "$missing" ] || fail "JSON fields not documented in docs/:$missing"
echo "json_documented: ok"
