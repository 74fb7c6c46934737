#!/bin/sh
# One cap syntax everywhere: a range A:B:STEP in either order (run from the
# higher cap down) or a list, in pflex sweep (sim and, with the fake NVML,
# nvml) and pflex study; a bad --caps (a cap twice, a zero step, junk) exits
# 2 at parse time, before anything is written.
P=${PFLEX:-build/pflex}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
J=llama-8b-pretrain-h200
"$P" sweep --job $J --caps 700:300:100 --repeats 1 > "$T/a.csv" || fail "sim 700:300:100"
"$P" sweep --job $J --caps 300:700:100 --repeats 1 > "$T/b.csv" || fail "sim 300:700:100"
"$P" sweep --job $J --caps 700,600,500,400,300 --repeats 1 > "$T/c.csv" || fail "sim list"
cmp -s "$T/a.csv" "$T/b.csv" || fail "the two orders of a range differ"
cmp -s "$T/a.csv" "$T/c.csv" || fail "a range and its list differ"
[ "$(cut -d, -f4 "$T/a.csv" | tr '\n' ' ')" = "cap_w 700 600 500 400 300 " ] \
    || fail "range caps: $(cut -d, -f4 "$T/a.csv" | tr '\n' ' ')"
bad() {
    what=$1; shift
    "$P" "$@" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$what: exit $rc, want 2"
    [ -s "$T/out" ] && fail "$what: wrote to stdout"
    grep -q -- "--caps" "$T/err" || fail "$what: message: $(cat "$T/err")"
    return 0
}
bad "sim twice" sweep --job $J --caps 700,700
bad "sim zero step" sweep --job $J --caps 700:300:0
bad "sim junk" sweep --job $J --caps 700:x:100
bad "sim empty item" sweep --job $J --caps 700,,600
bad "sim --out twice" sweep --job $J --caps 700,700 --out "$T/never.csv"
[ -e "$T/never.csv" ] && fail "a refused --caps wrote its --out file"
bad "study twice" study --caps 700,700 --out "$T/never"
bad "study one cap" study --caps 700 --out "$T/never"
[ -e "$T/never" ] && fail "a refused study --caps created its --out folder"
"$P" study --caps 300:700:100 --jobs 2 --no-charts --out "$T/s1" > /dev/null || fail "study 300:700:100"
"$P" study --caps 700:300:100 --jobs 2 --no-charts --out "$T/s2" > /dev/null || fail "study 700:300:100"
cmp -s "$T/s1/sweeps.csv" "$T/s2/sweeps.csv" || fail "study: the two orders of a range differ"
"$P" study --caps 300,700,500,600,400 --jobs 2 --no-charts --out "$T/s3" > /dev/null || fail "study list"
cmp -s "$T/s1/sweeps.csv" "$T/s3/sweeps.csv" || fail "study: a list differs from its range"
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
if [ -f "$FAKE" ]; then
    export FAKE_NVML_STATE="$T/state" PFLEX_NVML_LIB="$FAKE"
    : > "$T/state"
    for c in 700:300:100 300:700:100 700,600,500,400,300; do
        "$P" sweep --backend nvml --dry-run --power-only --caps $c > "$T/dry" 2> "$T/err" \
            || fail "nvml --caps $c: $(cat "$T/err")"
        grep -q 'caps (W): 700 600 500 400 300$' "$T/dry" || fail "nvml --caps $c: $(cat "$T/dry")"
    done
    bad "nvml twice" sweep --backend nvml --dry-run --power-only --caps 700,700
fi
echo "caps: ok"
