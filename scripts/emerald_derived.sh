#!/bin/sh
# emerald_derived.sh — the CSVs `pflex simulate --day` reads, made from the
# XLSX workbooks of the Emerald AI field demonstration's public repository
# (github.com/ai-emerald/emerald-ai-demo-may-2025, data/Fig2_data.xlsx and
# data/Fig345_data.xlsx), which ship the event traces only as spreadsheets:
#
#   sh scripts/emerald_derived.sh XLSX_DIR OUT_DIR
#
# XLSX_DIR holds the two workbooks (the repository's data/); OUT_DIR gets
# the eight files of emerald-demo/derived/ (made if missing).  Each sheet
# holds tables side by side; each table becomes one CSV, values unchanged
# (full precision, times as the sheet shows them).  Needs xlsx2csv (Debian
# package xlsx2csv).  Each file is written to a temporary name and renamed.
set -eu
usage="usage: emerald_derived.sh XLSX_DIR OUT_DIR"
src=${1:?$usage}
out=${2:?$usage}
command -v xlsx2csv >/dev/null 2>&1 || {
    echo "emerald_derived.sh: xlsx2csv not found (Debian: apt-get install xlsx2csv)" >&2; exit 2; }
for w in Fig2_data.xlsx Fig345_data.xlsx; do
    [ -r "$src/$w" ] || { echo "emerald_derived.sh: $src/$w: not readable" >&2; exit 2; }
done
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/emerald_derived.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# sheet WORKBOOK SHEET: the sheet as CSV, floats at full precision.
sheet() {
    xlsx2csv --ignore-formats float --floatformat %.17g -n "$2" "$src/$1" > "$tmp/sheet.csv" || {
        echo "emerald_derived.sh: $src/$1: cannot read sheet '$2'" >&2; exit 2; }
    tr -d '\r' < "$tmp/sheet.csv" > "$tmp/s.csv"
}

# table NAME HEADER FIRST_COL LAST_COL EXPECT: columns FIRST..LAST of the
# sheet's rows below its two title rows, empty rows dropped, under HEADER;
# EXPECT is the sheet's own header cell at FIRST_COL, checked so that a
# changed workbook is refused rather than exported wrongly.
table() {
    awk -F, -v a="$3" -v b="$4" -v hdr="$2" -v expect="$5" -v name="$1" '
        NR == 1 { next }
        NR == 2 { if ($a != expect) { printf "emerald_derived.sh: %s: column %d is \"%s\", expected \"%s\"\n", name, a, $a, expect > "/dev/stderr"; bad = 1; exit 2 }
                  print hdr; next }
        $a != "" { line = $a; for (i = a + 1; i <= b; i++) line = line "," $i; print line; n++ }
        END { if (!bad && n == 0) { print "emerald_derived.sh: " name ": no rows" > "/dev/stderr"; exit 2 } }
    ' "$tmp/s.csv" > "$tmp/$1" || exit 2
}

sheet Fig2_data.xlsx SRP_granular
table Fig2_SRP_exp_total_power_W.csv "timestamp,total_W" 1 2 timestamp
sheet Fig2_data.xlsx "Performance Data"
table Fig2_performance_data.csv "Model,Performance,Flex Bucket,Flexibility,Weight based on bucket" 1 5 Model
sheet Fig345_data.xlsx Fig3
table Fig3_AZPS_demand_2025-05-01.csv "timestamp,AZPS_actual_GW" 1 2 Timestamp
table Fig3_APS_exp_total_power_W.csv "timestamp,total_power_W" 4 5 Timestamp
sheet Fig345_data.xlsx Fig5
table Fig5_APS_exp_per_job_power_W.csv \
    "timestamp,ft_llama_8b_dolly-txw0sl4h,infer_llama_8b-bw9rr4h2,infer_llama_8b-kxymm0ql,infer_llama_8b-stsiwyqz,pt_mpt_13b_sm-k2jychqp,pt_mpt_7b_fast-60hrpily,total (W)" \
    1 8 timestamp
table Fig5_APS_simulator_projected_power_W.csv "timestamp,projected_power_W" 10 11 timestamp
sheet Fig345_data.xlsx Fig4
table Fig4_CAISO_2020-08-14_demand_MW.csv "time,demand_MW,day_ahead_net_forecast_MW" 1 3 Time
table Fig4_CAISO_reenactment_exp_total_power_W.csv "time,total_power_W" 5 6 Time

for f in "$tmp"/*.csv; do
    case ${f##*/} in sheet.csv|s.csv) continue ;; esac
    cp "$f" "$out/.${f##*/}.tmp" && mv "$out/.${f##*/}.tmp" "$out/${f##*/}"
done
