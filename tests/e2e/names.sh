#!/bin/sh
# Every job name that goes in comes out, in every format, or is refused at
# read time with file:line: names with a leading '#', commas, quotes,
# spaces and non-ASCII UTF-8 make the round trip sweep CSV -> pflex pfi
# --csv / --json -> pflex allocate --pfi (CSV and JSON); a job file named
# '#...' gives a sweep that reads back under that name; invalid UTF-8, a
# NUL byte or a control character in a name is refused, exit 2.
P=${PFLEX:-build/pflex}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# The names as a CSV field (quoted where CSV needs it), as JSON writes them.
cat > "$T/names" <<'NAMES'
#hash|"#hash"|"#hash"
a,b|"a,b"|"a,b"
say "hi"|"say ""hi"""|"say \"hi\""
über-模型|über-模型|"über-模型"
two words|two words|"two words"
NAMES
{
    echo "job,gpus,cap_w,power_w,throughput"
    while IFS='|' read -r name csv json; do
        echo "$csv,2,700,600,100"
        echo "$csv,2,500,450,90"
    done < "$T/names"
} > "$T/s.csv"
"$P" pfi --json "$T/s.csv" > "$T/p.json" || fail "pfi --json"
"$P" pfi --csv "$T/s.csv" > "$T/p.csv" || fail "pfi --csv"
"$P" pfi "$T/s.csv" > "$T/p.txt" || fail "pfi table"
"$P" allocate --pfi "$T/p.csv" --reduce 0.2 --json > "$T/a.json" || fail "allocate --pfi --json"
"$P" allocate --pfi "$T/p.csv" --reduce 0.2 --csv > "$T/a.csv" || fail "allocate --pfi --csv"
[ "$(grep -c '"job":' "$T/p.json")" -eq 5 ] || fail "pfi --json: $(grep -c '"job":' "$T/p.json") jobs, want 5"
while IFS='|' read -r name csv json; do
    grep -qF "\"job\": $json" "$T/p.json" || fail "pfi --json lacks $json"
    grep -qF "\"job\": $json" "$T/a.json" || fail "allocate --json (from pfi --csv) lacks $json"
    grep -qF "$csv," "$T/p.csv" || fail "pfi --csv lacks $csv"
    grep -qF "$csv," "$T/a.csv" || fail "allocate --csv lacks $csv"
    grep -qF "$name" "$T/p.txt" || fail "the pfi table lacks $name"
done < "$T/names"
# A sweep of a job file whose name starts with '#' reads back under it.
sed 's/"llama-8b-my-pretrain"/"#8b, \\"mine\\""/' tests/data/job_llama8b_h200.json > "$T/j.json"
"$P" sweep --job "$T/j.json" --caps 700,500 --repeats 1 > "$T/j.csv" || fail "sweep of #job"
"$P" pfi --json "$T/j.csv" > "$T/j.out" || fail "pfi of the #job sweep"
grep -qF '"job": "#8b, \"mine\""' "$T/j.out" || fail "the #job's name: $(grep '"job"' "$T/j.out")"
# Refused: each at its line, nothing on stdout.
refuse() {
    what=$1 want=$2
    "$P" pfi "$T/r.csv" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$what: exit $rc, want 2"
    [ -s "$T/out" ] && fail "$what: wrote to stdout"
    grep -qF "$want" "$T/err" || fail "$what: $(cat "$T/err")"
    return 0
}
printf 'job,cap_w,power_w,throughput\nok,700,600,100\nok,500,450,90\nb\377d,700,600,100\n' > "$T/r.csv"
refuse "invalid UTF-8" "r.csv:4: column 'job': the job name is not valid UTF-8"
printf 'job,cap_w,power_w,throughput\na\000x,700,600,100\na\000y,700,600,100\n' > "$T/r.csv"
refuse "NUL" "r.csv:2: column 'job': the job name holds a NUL byte"
printf 'job,cap_w,power_w,throughput\n"a\nb",700,600,100\n' > "$T/r.csv"
refuse "line break" "r.csv:2: column 'job': the job name holds a control character"
printf 'job,gpu,cap_w,power_w,throughput\na,H\377,700,600,100\n' > "$T/r.csv"
refuse "GPU name" "r.csv:2: column 'gpu': the GPU name is not valid UTF-8"
# The same names refused by the PFI CSV (--pfi) and the jobs file (--jobs)
# at their line, by allocate and evaluate alike.
refuse_in() {
    what=$1 want=$2; shift 2
    for cmd in allocate evaluate; do
        "$P" $cmd "$@" --reduce 0.1 > "$T/out" 2> "$T/err"; rc=$?
        [ $rc -eq 2 ] || fail "$cmd $what: exit $rc, want 2 ($(cat "$T/err"))"
        [ -s "$T/out" ] && fail "$cmd $what: wrote to stdout"
        grep -qF "$want" "$T/err" || fail "$cmd $what: $(cat "$T/err")"
    done
    return 0
}
printf 'job,cap_w,power_w,throughput\nok,700,600,100\nok,500,450,90\n' > "$T/ok.csv"
P1='job,gpus,power_w,throughput,pfi'
printf "$P1\nok,1,600,100,1.5\nb\377d,1,600,100,1.5\n" > "$T/r.csv"
refuse_in "PFI CSV invalid UTF-8" "r.csv:3: column 'job': the job name is not valid UTF-8" --pfi "$T/r.csv"
printf "$P1\na\000x,1,600,100,1.5\na\000y,1,600,100,1.5\n" > "$T/r.csv"
refuse_in "PFI CSV NUL" "r.csv:2: column 'job': the job name holds a NUL byte" --pfi "$T/r.csv"
printf "$P1\n\"a\tb\",1,600,100,1.5\n" > "$T/r.csv"
refuse_in "PFI CSV control" "r.csv:2: column 'job': the job name holds a control character" --pfi "$T/r.csv"
printf "$P1,gpu\na,1,600,100,1.5,H\377\n" > "$T/r.csv"
refuse_in "PFI CSV GPU name" "r.csv:2: column 'gpu': the GPU name is not valid UTF-8" --pfi "$T/r.csv"
printf 'job,curve,gpus\nx,ok,1\nb\377d,ok,1\n' > "$T/r.csv"
refuse_in "jobs file invalid UTF-8" "r.csv:3: column 'job': the job name is not valid UTF-8" "$T/ok.csv" --jobs "$T/r.csv"
printf 'job,curve,gpus\na\000x,ok,1\na\000y,ok,1\n' > "$T/r.csv"
refuse_in "jobs file NUL" "r.csv:2: column 'job': the job name holds a NUL byte" "$T/ok.csv" --jobs "$T/r.csv"
printf 'job,curve,gpus\n"a\nb",ok,1\n' > "$T/r.csv"
refuse_in "jobs file control" "r.csv:2: column 'job': the job name holds a control character" "$T/ok.csv" --jobs "$T/r.csv"
echo "names: ok"
