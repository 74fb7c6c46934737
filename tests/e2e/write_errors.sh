#!/bin/sh
# Every command's standard output on a full disk (/dev/full): exit 1 and
# "pflex CMD: writing standard output: No space left on device" on stderr,
# never a silent exit 0 or a silent 1.  --help, --version and the listings
# included; nvml --dry-run when the fake NVML library is built.
P=${PFLEX:-build/pflex}
[ -w /dev/full ] || { echo "no /dev/full here"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
S=tests/data/sweep_basic.csv
"$P" pfi --csv "$S" > "$T/p.csv" || fail "pfi --csv"
full() {
    cmd=$1; shift
    "$P" "$@" > /dev/full 2> "$T/err"; rc=$?
    [ $rc -eq 1 ] || fail "$*: exit $rc on /dev/full, want 1 ($(cat "$T/err"))"
    grep -q "^pflex$cmd: writing standard output: No space left on device" "$T/err" \
        || fail "$*: message: $(cat "$T/err")"
}
full "" --help
full "" --version
for c in pfi sweep allocate evaluate study; do full " $c" $c --help; done
full " sweep" sweep --list-presets
full " sweep" sweep --list-presets --json
full " pfi" pfi "$S"
full " pfi" pfi --json "$S"
full " pfi" pfi --csv "$S"
full " allocate" allocate "$S" --reduce 0.3
full " allocate" allocate "$S" --reduce 0.3 --json
full " allocate" allocate --pfi "$T/p.csv" --reduce 0.3
full " evaluate" evaluate "$S" --reduce 0.3
full " evaluate" evaluate "$S" --reduce 0.3 --json
full " sweep" sweep --job emerald-pt-mpt-7b --repeats 1
full " study" study --out "$T/study"
full " study" study --out "$T/study2" --json
FAKE="${PFLEX_BUILD:-build}/fake-nvml/libnvidia-ml.so.1"
if [ -f "$FAKE" ]; then
    export FAKE_NVML_STATE="$T/state" PFLEX_NVML_LIB="$FAKE"
    : > "$T/state"
    full " sweep" sweep --backend nvml --dry-run --caps 500 --power-only
    full " sweep" sweep --backend nvml --list
fi
# A good write still exits 0 with nothing on stderr.
"$P" --version > "$T/v" 2> "$T/err" || fail "--version exit"
[ -s "$T/err" ] && fail "--version wrote to stderr"
grep -q '^pflex [0-9]' "$T/v" || fail "--version text"
echo "write_errors: ok"
