#!/bin/sh
# pflex telemetry end to end: every fixture format, --csv read back through
# stdin, forced formats, and bad input that must exit 2 naming file and line
# with nothing on stdout.
set -u
P=${PFLEX:-build/pflex}
D=tests/data/telemetry
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$P" telemetry --help | grep -q 'EXAMPLES' || fail "--help"
for f in smi_units.csv smi_nounits.csv dmon.txt dcgm_exporter.prom prom_vector.json prom_matrix.json; do
    "$P" telemetry "$D/$f" > "$T/out" || fail "$f: exit $?"
    grep -q ' series, ' "$T/out" || fail "$f: no summary line"
done
"$P" telemetry --csv --job j "$D/smi_units.csv" > "$T/long.csv" || fail "csv"
head -1 "$T/long.csv" | grep -qx 'job,host,gpu,uuid,time_s,field,value' || fail "csv header"
grep -q '^j,,0,GPU-1b2c3d4e-0000-1111-2222-333344445555,1796292000.125,DCGM_FI_DEV_POWER_USAGE,655.21' \
    "$T/long.csv" || fail "csv row"
"$P" telemetry --csv - < "$T/long.csv" | cmp -s - "$T/long.csv" || fail "long CSV does not read back the same"
"$P" telemetry --json "$D/prom_matrix.json" > "$T/json" || fail "json"
grep -q '"DCGM_FI_PROF_DRAM_ACTIVE"' "$T/json" || fail "json field"
grep -q '"slurm-4242"' "$T/json" || fail "json job"
# the job map
"$P" telemetry --csv --job-map "$D/jobmap.csv" --host node-a "$D/dmon.txt" > "$T/mapped" || fail "job map"
grep -q '^llama-pt,node-a,1,' "$T/mapped" || fail "job map did not map GPU 1"

# one job per file, named by the file
"$P" telemetry --csv --job-from-file "$D/smi_units.csv" "$D/dmon.txt" > "$T/perfile" || fail "--job-from-file"
grep -q '^smi_units,,0,' "$T/perfile" || fail "--job-from-file: smi_units"
grep -q '^dmon,,1,' "$T/perfile" || fail "--job-from-file: dmon"

bad() { # name, expected message part, content, options...
    printf '%b' "$3" > "$T/$1"
    n=$1; m=$2; shift 3
    "$P" telemetry "$@" "$T/$n" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$n: exit $rc, want 2"
    [ -s "$T/out" ] && fail "$n: wrote to stdout"
    grep -qF "$m" "$T/err" || fail "$n: stderr '$(cat "$T/err")' lacks '$m'"
}
bad empty.txt "empty.txt: empty file" ""
bad garbage.txt "garbage.txt:1: not telemetry" "hello\n"
bad smi.csv "smi.csv:3: column 2: 'x W' is not a value" "index, power.draw [W]\n0, 1 W\n0, x W\n"
bad dmon.txt "dmon.txt:2: 1 values, the header has 2 fields" "#Entity POWER SMCLK\nGPU 0 1\n"
bad prom.txt "prom.txt:1: unterminated label value" 'DCGM_FI_DEV_GPU_UTIL{gpu="0} 1\n'
bad forced.txt "forced.txt:1: a row before" "index, power.draw\n" --format dcgmi
bad long.txt "long.txt:1: line longer than 16 bytes" "# HELP DCGM_FI_DEV_GPU_UTIL utilisation\n" --max-line 16
# A real capture: nvidia-smi --query-gpu on one H200 (units in the header,
# clocks_event_reasons as Active / Not Active, one column pflex does not
# read).  Each field pflex takes must hold the column's numbers, summed here
# by awk from the file itself; the sw_power_cap column becomes bit 0x4.
H=data/h200-device/run1/nvidia-smi-query.csv
if [ -f "$H" ]; then
    "$P" telemetry --csv "$H" > "$T/h200.csv" || fail "h200: read"
    "$P" telemetry "$H" > "$T/h200.txt" || fail "h200: table"
    rows=$(($(wc -l < "$H") - 1))
    grep -q "^8 series, $((8 * rows)) samples, 0 skipped" "$T/h200.txt" ||
        fail "h200: $(tail -1 "$T/h200.txt")"
    # column of the capture : DCGM field
    for cf in 3:POWER_USAGE 4:POWER_MGMT_LIMIT 5:SM_CLOCK 6:MEM_CLOCK 7:GPU_TEMP 8:GPU_UTIL \
              9:MEM_COPY_UTIL; do
        c=${cf%%:*}; f=DCGM_FI_DEV_${cf#*:}
        want=$(awk -F', *' -v c="$c" 'NR > 1 { split($c, v, " "); s += v[1]; n++ }
               END { printf "%d %.4f", n, s }' "$H")
        got=$(awk -F, -v f="$f" '$6 == f { s += $7; n++ } END { printf "%d %.4f", n, s }' \
              "$T/h200.csv")
        [ "$want" = "$got" ] || fail "h200: $f: file $want, read $got"
    done
    want=$(awk -F', *' 'NR > 1 && $10 == "Active" { n++ } END { printf "%d", 4 * n }' "$H")
    got=$(awk -F, '$6 == "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" { s += $7 } END { printf "%d", s }' \
          "$T/h200.csv")
    [ "$want" -gt 0 ] && [ "$want" = "$got" ] || fail "h200: sw_power_cap: $want vs $got"
    # the first row's stamp, 2026/12/04 17:04:16.559, as UTC
    first=$(awk -F, 'NR == 2 { print $5 }' "$T/h200.csv")
    [ "$first" = "$(($(date -u -d '2026-12-04 17:04:16' +%s))).559" ] || fail "h200: time $first"
else
    echo "skip: $H absent (the H200 capture)"
fi
"$P" telemetry --format nonsense "$D/dmon.txt" > "$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --format"
# a URL where nothing listens: an error (exit 2), quickly
"$P" telemetry --timeout-ms 2000 http://127.0.0.1:9/metrics > "$T/out" 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "dead URL: exit $rc"
exit 0
