#!/bin/sh
# scripts/emerald_derived.sh turns the field demonstration's XLSX workbooks
# into the CSVs `pflex simulate --day` reads: the tables come out whole and
# exact (against the shared data's own exports when present), a missing
# workbook is refused with exit 2, and `pflex simulate --day srp` runs on
# what the script made.  Skips (77) without xlsx2csv or the workbooks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PFLEX=${PFLEX:-$root/build/pflex}
data=${SHARED_DATA:-$root/../shared/data}/emerald-demo
command -v xlsx2csv >/dev/null 2>&1 || { echo "SKIP: xlsx2csv not installed"; exit 77; }
[ -r "$data/data/Fig2_data.xlsx" ] && [ -r "$data/data/Fig345_data.xlsx" ] \
    || { echo "SKIP: $data/data/Fig2_data.xlsx, Fig345_data.xlsx not found (set SHARED_DATA)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/none"
timeout 30 sh "$root/scripts/emerald_derived.sh" "$tmp/none" "$tmp/x" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "missing workbooks: exit $rc, expected 2"
grep -q 'Fig2_data.xlsx: not readable' "$tmp/err" || fail "missing workbooks: $(cat "$tmp/err")"

out=$tmp/d/emerald-demo/derived
timeout 60 sh "$root/scripts/emerald_derived.sh" "$data/data" "$out" || fail "conversion exit $?"
n=$(ls "$out" | wc -l)
[ "$n" -eq 8 ] || fail "expected 8 CSVs, got $n: $(ls "$out")"
[ "$(wc -l < "$out/Fig2_SRP_exp_total_power_W.csv")" -eq 401 ] || fail "SRP trace: not 400 minutes"
head -1 "$out/Fig2_SRP_exp_total_power_W.csv" | grep -qx 'timestamp,total_W' || fail "SRP header"
grep -q '^14:00,92760.2077325478' "$out/Fig4_CAISO_reenactment_exp_total_power_W.csv" \
    || fail "CAISO times not HH:MM or values rounded"
if [ -d "$data/derived" ]; then
    for f in "$data"/derived/*.csv; do
        tr -d '\r' < "$f" | cmp -s - "$out/${f##*/}" || fail "${f##*/} differs from the shared export"
    done
fi

# pflex reads what the script made, beside the measured curves.
mkdir -p "$tmp/d/emerald-demo/data"
ln -s "$data/data/dvfs_sweep.csv" "$tmp/d/emerald-demo/data/dvfs_sweep.csv"
timeout 120 "$PFLEX" simulate --day srp --data "$tmp/d" --out "$tmp/srp" > "$tmp/sim.txt" 2>&1 \
    || fail "pflex simulate --day srp on the converted files: $(tail -5 "$tmp/sim.txt")"
[ -s "$tmp/srp/summary.json" ] || fail "no summary.json: $(ls "$tmp/srp")"
echo "emerald_derived: ok"
