#!/bin/sh
# Outputs are written atomically and never through a link or over an
# input: pflex sweep --out and pflex study --out refuse a symbolic link
# (its target unchanged), sweep --out refuses its own job file, a refused
# or failed run leaves the old output whole, and a good run leaves no
# temporary file behind.
P=${PFLEX:-build/pflex}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
J=emerald-pt-mpt-7b
echo precious > "$T/target"
ln -s target "$T/link"
"$P" sweep --job $J --out "$T/link" > "$T/out" 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "sweep --out LINK: exit $rc"
grep -q "is a symbolic link" "$T/err" || fail "sweep --out LINK: $(cat "$T/err")"
[ "$(cat "$T/target")" = precious ] || fail "sweep --out wrote through a link"
cp tests/data/job_llama8b_h200.json "$T/job.json"
"$P" sweep --job "$T/job.json" --out "$T/job.json" 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "sweep --out JOBFILE: exit $rc"
grep -q "is also an input" "$T/err" || fail "sweep --out JOBFILE: $(cat "$T/err")"
cmp -s "$T/job.json" tests/data/job_llama8b_h200.json || fail "sweep --out wiped its job file"
"$P" sweep --job $J --repeats 1 --out "$T/s.csv" || fail "sweep --out"
cp "$T/s.csv" "$T/s.old"
"$P" sweep --job $J --caps 9999 --out "$T/s.csv" 2> /dev/null && fail "a cap out of range passed"
cmp -s "$T/s.csv" "$T/s.old" || fail "a refused sweep changed its --out file"
[ "$(ls -A "$T" | grep -c '^\.')" -eq 0 ] || fail "temporary files left: $(ls -A "$T")"

"$P" study --jobs 2 --no-charts --out "$T/st" > /dev/null || fail "study"
for f in sweeps.csv pfi.csv summary.json report.html; do cp "$T/st/$f" "$T/$f.old"; done
mv "$T/st/summary.json" "$T/elsewhere.json"
ln -s ../elsewhere.json "$T/st/summary.json"
"$P" study --jobs 3 --no-charts --out "$T/st" > "$T/out" 2> "$T/err"; rc=$?
[ $rc -ne 0 ] || fail "study wrote through a symbolic link"
grep -q "summary.json: is a symbolic link" "$T/err" || fail "study link: $(cat "$T/err")"
cmp -s "$T/elsewhere.json" "$T/summary.json.old" || fail "study changed the link's target"
for f in sweeps.csv pfi.csv report.html; do
    cmp -s "$T/st/$f" "$T/$f.old" || fail "a failed study replaced $f: the set is mixed"
done
[ "$(ls -A "$T/st" | grep -c '^\.')" -eq 0 ] || fail "study left temporary files: $(ls -A "$T/st")"
rm "$T/st/summary.json"
"$P" study --jobs 3 --no-charts --out "$T/st" > /dev/null || fail "study over an old set"
cmp -s "$T/st/sweeps.csv" "$T/sweeps.csv.old" && fail "the new study did not replace sweeps.csv"
[ -f "$T/st/summary.json" ] && [ ! -L "$T/st/summary.json" ] || fail "summary.json not written"
echo "outputs: ok"
