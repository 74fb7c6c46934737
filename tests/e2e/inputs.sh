#!/bin/sh
# What a file argument may really be: a directory is refused as one (exit
# 2, "is a directory", nothing on stdout) by every command and option that
# reads a file; an endless stream stops at the line limit (exit 2); out of
# memory is a system error (exit 1), not bad input.
P=${PFLEX:-build/pflex}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir "$T/dir"
printf 'job,cap_w,power_w,throughput\na,700,600,100\na,500,450,90\n' > "$T/s.csv"
"$P" pfi --csv "$T/s.csv" > "$T/p.csv" || fail "pfi --csv"
printf 'job,gpus\na,1\n' > "$T/jobs.csv"
dir_case() {
    name=$1; shift
    "$P" "$@" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$name: exit $rc, want 2 ($(cat "$T/err"))"
    grep -q "dir: is a directory" "$T/err" || fail "$name: message: $(cat "$T/err")"
    [ -s "$T/out" ] && fail "$name: wrote to stdout"
    return 0
}
dir_case pfi pfi "$T/dir"
dir_case allocate allocate "$T/dir" --reduce 0.3
dir_case evaluate evaluate "$T/dir" --reduce 0.3
dir_case allocate--pfi allocate --pfi "$T/dir" --reduce 0.3
dir_case evaluate--pfi evaluate "$T/s.csv" --pfi "$T/dir" --reduce 0.3
dir_case allocate--jobs allocate "$T/s.csv" --jobs "$T/dir" --reduce 0.3
dir_case sweep--job sweep --job "$T/dir"

if [ -r /dev/zero ]; then
    timeout 20 "$P" pfi /dev/zero > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "/dev/zero: exit $rc, want 2"
    grep -q "/dev/zero:1: line longer than" "$T/err" || fail "/dev/zero: $(cat "$T/err")"
    timeout 20 "$P" pfi < /dev/zero > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "stdin /dev/zero: exit $rc, want 2"
fi

# Out of memory: a 3-million-job sweep under a 60 MB address-space limit.
# A sanitized build cannot run under such a limit at all: skipped there.
if (ulimit -v 60000 && "$P" --version) > /dev/null 2>&1; then
    awk 'BEGIN { print "job,cap_w,power_w,throughput";
                 for (i = 0; i < 3000000; i++) printf "j%d,%d,600,1\n", i, 700 - i % 2 }' > "$T/big.csv"
    (ulimit -v 60000; "$P" pfi - < "$T/big.csv" > "$T/out" 2> "$T/err"); rc=$?
    [ $rc -eq 1 ] || fail "out of memory: exit $rc, want 1 ($(cat "$T/err"))"
    grep -q "out of memory" "$T/err" || fail "out of memory: $(cat "$T/err")"
    # allocate and evaluate read a sweep job by job: 1.5 million jobs of two
    # caps each do not fit either
    awk 'BEGIN { print "job,cap_w,power_w,throughput";
                 for (i = 0; i < 1500000; i++) printf "j%d,700,600,1\nj%d,500,450,0.9\n", i, i }' \
        > "$T/big2.csv"
    for cmd in allocate evaluate; do
        (ulimit -v 60000; "$P" $cmd "$T/big2.csv" --reduce 0.1 > "$T/out" 2> "$T/err"); rc=$?
        [ $rc -eq 1 ] || fail "$cmd out of memory: exit $rc, want 1 ($(cat "$T/err"))"
        grep -q "out of memory" "$T/err" || fail "$cmd out of memory: $(cat "$T/err")"
        [ -s "$T/out" ] && fail "$cmd out of memory: wrote to stdout"
    done
fi
echo "inputs: ok"
