#!/bin/sh
# Runs every test binary of one build, then the end-to-end scripts, and
# closes with one line CI reads: "N passed, N failed, N skipped".
# A cmocka binary's exit status is its number of failed tests; a shell test
# passes with 0, is skipped with 77 and fails otherwise.
BUILD=${BUILD:-build}
export PFLEX="$(pwd)/$BUILD/pflex" PFLEX_BUILD="$(pwd)/$BUILD"
export SHARED_DATA="${PFLEX_SHARED_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/shared/data}"
pass=0; fail=0; skip=0; failed_names=""
log=$(mktemp)
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    total=$(grep -c '^\[ RUN      \]' "$log")
    sk=$(grep -c '^\[  SKIPPED \]' "$log")
    if [ $rc -gt 0 ] && [ $rc -le "$total" ]; then f=$rc; else f=0; fi
    if [ $rc -ne 0 ] && [ $f -eq 0 ]; then f=$((total > 0 ? total : 1)); fi
    skip=$((skip + sk)); fail=$((fail + f)); pass=$((pass + total - f - sk))
    [ $f -ne 0 ] && failed_names="$failed_names $(basename "$t")"
done
for t in tests/e2e/*.sh; do
    [ -f "$t" ] || continue
    name=$(basename "$t" .sh)
    sh "$t" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); echo "[  E2E OK  ] $name"
    elif [ $rc -eq 77 ]; then skip=$((skip + 1)); echo "[ E2E SKIP ] $name: $(tail -1 "$log")"
    else fail=$((fail + 1)); failed_names="$failed_names $name"; echo "[ E2E FAIL ] $name"; sed 's/^/    /' "$log"
    fi
done
rm -f "$log"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$BUILD: $pass passed, $fail failed, $skip skipped"
[ -n "${SUMMARY:-}" ] && echo "$pass $fail $skip" >> "$SUMMARY"
[ $fail -eq 0 ]
