#!/bin/sh
# The command line a newcomer meets: --version listed in pflex --help, an
# EXAMPLES section in pflex --help, sweep --help and study --help, whose
# example commands run; one plain message for an unknown option in every
# command, exit 2, nothing on stdout.
P=${PFLEX:-build/pflex}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$P" --help > "$T/h" || fail "pflex --help exit"
grep -q -- '--version' "$T/h" || fail "pflex --help does not list --version"
grep -q 'docs/contract.md' "$T/h" || fail "pflex --help does not cite docs/contract.md"
for c in "" sweep study; do
    "$P" $c --help > "$T/h" || fail "$c --help exit"
    grep -q '^EXAMPLES' "$T/h" || fail "pflex $c --help has no EXAMPLES section"
    grep -q 'SPEC' "$T/h" && fail "pflex $c --help cites a SPEC the repository does not hold"
done
for c in pfi sweep allocate evaluate study; do
    "$P" $c --frobnicate > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$c --frobnicate: exit $rc"
    [ -s "$T/out" ] && fail "$c --frobnicate: wrote to stdout"
    [ "$(cat "$T/err")" = "pflex $c: unknown option '--frobnicate' (see pflex $c --help)" ] \
        || fail "$c --frobnicate: $(cat "$T/err")"
    "$P" $c -Z > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$c -Z: exit $rc"
    [ "$(cat "$T/err")" = "pflex $c: unknown option '-Z' (see pflex $c --help)" ] \
        || fail "$c -Z: $(cat "$T/err")"
done
# Help is printed as written: one EXAMPLES block, no printf escapes left in it.
for c in $("$P" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
    "$P" $c --help > "$T/h" 2>&1 || fail "$c --help exit"
    [ "$(grep -c '^EXAMPLES' "$T/h")" -eq 1 ] || fail "pflex $c --help: not one EXAMPLES block"
    grep -q '%%' "$T/h" && fail "pflex $c --help prints '%%'"
done
# Long work says how far it is off a terminal too, with the time left.
if [ -d "${SHARED_DATA:-}/emerald-demo" ]; then
    PFLEX_PROGRESS_EVERY_S=0.3 "$P" simulate --day srp --data "$SHARED_DATA" > /dev/null 2> "$T/prog" \
        || fail "simulate --day srp"
    grep -qE '^pflex simulate: +[0-9]+ %' "$T/prog" || fail "no progress line: $(head -3 "$T/prog")"
    # the time left, once a second of work tells it
    grep -E '^pflex simulate: +[0-9]+ %' "$T/prog" | grep -vqE '^pflex simulate: +[0-9]+ %(, [0-9a-z ]+ left)?$' \
        && fail "a progress line out of form: $(head -3 "$T/prog")"
    grep -qE '^pflex simulate: done in ' "$T/prog" || fail "no closing progress line"
fi
"$P" help sweep | grep -q "usage: pflex sweep" || fail "pflex help sweep"
"$P" sweep --job > "$T/out" 2> "$T/err"
grep -q -- "--job needs a value" "$T/err" || fail "sweep --job: $(cat "$T/err")"
# --list-presets --json: every preset of the table, as JSON.
"$P" sweep --list-presets > "$T/table" || fail "--list-presets"
"$P" sweep --list-presets --json > "$T/presets.json" || fail "--list-presets --json"
[ "$(grep -c '"name":' "$T/presets.json")" -eq "$(wc -l < "$T/table")" ] \
    || fail "--list-presets --json lists $(grep -c '"name":' "$T/presets.json") presets, the table $(wc -l < "$T/table")"
grep -q '"gpu": "H200-SXM-141GB"' "$T/presets.json" || fail "--list-presets --json lacks gpu"
if command -v jq > /dev/null; then
    [ "$(jq '.presets | length' "$T/presets.json")" -eq "$(wc -l < "$T/table")" ] || fail "jq count"
fi
echo "cli_surface: ok"
