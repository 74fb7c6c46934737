#!/bin/sh
# One unit grammar for every power and share: W, kW, MW for powers, % (or
# a bare fraction where the option says so) for shares; a value whose
# magnitude says the unit is wrong is refused with what was probably meant.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout -k 5 60 sh "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
P=${PFLEX:-$here/../../build/pflex}
S=$here/../data/sweep_basic.csv
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() {      # ok WHAT CMD...: runs, and is not refused as bad usage
    what=$1; shift
    "$@" >"$T/out" 2>"$T/err"; rc=$?
    [ $rc -ne 2 ] || fail "$what: refused: $(cat "$T/err")"
}
refused() { # refused WHAT TEXT CMD...: exit 2 with TEXT on stderr
    what=$1 text=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$what: exit $rc"
    grep -qF -- "$text" "$T/err" || fail "$what: '$(cat "$T/err")' lacks '$text'"
}
ok "allocate --budget-w 2kW" "$P" allocate "$S" --budget-w 2kW
cmp -s "$T/out" /dev/null && fail "allocate --budget-w 2kW printed nothing"
"$P" allocate "$S" --budget-w 2000 > "$T/w" 2>/dev/null
cmp -s "$T/out" "$T/w" || fail "--budget-w 2kW and 2000 differ"
ok "allocate --reduce 30%" "$P" allocate "$S" --reduce 30%
"$P" allocate "$S" --reduce 0.3 > "$T/f" 2>/dev/null
cmp -s "$T/out" "$T/f" || fail "--reduce 30% and 0.3 differ"
ok "allocate --floor 90%" "$P" allocate "$S" --reduce 0.1 --floor 90%
refused "allocate --reduce 30" "did you mean 30%?" "$P" allocate "$S" --reduce 30
refused "allocate --floor 90" "did you mean 90%?" "$P" allocate "$S" --reduce 0.1 --floor 90
refused "allocate --reduce 3kW" "is a power" "$P" allocate "$S" --reduce 3kW
refused "allocate --budget-w 50%" "is a share" "$P" allocate "$S" --budget-w 50%
refused "simulate --floor 75" "did you mean 75%?" "$P" simulate --floor 75
refused "controller --floor 90" "did you mean 90%?" "$P" controller run --floor 90
refused "controller --other-w 5%" "is a share" "$P" controller run --other-w 5%
# a sweep written in kW: refused on the row, with the W it probably meant
printf 'job,cap_w,power_w,throughput\na,0.7,0.65,100\na,0.5,0.48,90\n' > "$T/kw.csv"
refused "pfi on a sweep in kW" "0.7 kW is 700 W" "$P" pfi "$T/kw.csv"
# what the operator gave wrong exits 2, as everywhere
printf 'secret\n' > "$T/tok"; chmod 644 "$T/tok"
refused "agent with a readable token" "chmod 600" "$P" agent --backend sim --gpus 1 --token-file "$T/tok" --listen 127.0.0.1:0
chmod 600 "$T/tok"
"$P" allocate "$S" --budget-w 6kW --json > "$T/plan.json" 2>/dev/null
refused "apply --agent without a scheme" "starts with http://" "$P" apply "$T/plan.json" --agent node1:9410 --token-file "$T/tok"
# nvidia-smi writes its host's local time with no zone: --tz says which
smi=$here/../data/telemetry/smi_units.csv
t_of() { "$P" telemetry --csv "$@" "$smi" | awk -F, 'NR == 2 { print $5 }'; }
[ "$(t_of)" = 1796292000.125 ] || fail "default: 2026/12/03 10:00:00.125 is not read as UTC: $(t_of)"
[ "$(t_of --tz +02:00)" = 1796284800.125 ] || fail "--tz +02:00: $(t_of --tz +02:00)"
if [ -f /usr/share/zoneinfo/America/Phoenix ]; then
    [ "$(t_of --tz America/Phoenix)" = 1796317200.125 ] || fail "--tz America/Phoenix: $(t_of --tz America/Phoenix)"
fi
refused "--tz Mars/Olympus" "not a zone" "$P" telemetry --tz Mars/Olympus "$smi"
echo "units: ok"
